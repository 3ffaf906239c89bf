// Launch-shape checks of the emulated launcher (see launch.h), with the limits of sm_80/sm_90.
#include "emulation/launch.h"

#include <cstdio>

namespace gattn::emu {

namespace {
std::string dims(const dim3& d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", d.x, d.y, d.z);
  return buf;
}
}  // namespace

std::string check_launch_shape(const LaunchShape& s, std::size_t max_dynamic_shared) {
  const unsigned long long threads = 1ull * s.block.x * s.block.y * s.block.z;
  if (threads == 0 || s.grid.x == 0 || s.grid.y == 0 || s.grid.z == 0)
    return "launch with an empty grid " + dims(s.grid) + " or block " + dims(s.block);
  if (threads > 1024 || s.block.x > 1024 || s.block.y > 1024 || s.block.z > 64)
    return "block " + dims(s.block) + " exceeds the device's 1024 threads per block (z at most 64)";
  if (s.grid.x > 2147483647u || s.grid.y > 65535 || s.grid.z > 65535)
    return "grid " + dims(s.grid) + " exceeds the device's limits (x < 2^31, y and z at most 65535)";
  if (s.dynamic_shared_bytes > max_dynamic_shared)
    return std::to_string(s.dynamic_shared_bytes) + " bytes of dynamic shared memory exceed the kernel's limit of " +
           std::to_string(max_dynamic_shared) + " (raise it with cudaFuncSetAttribute)";
  return "";
}

}  // namespace gattn::emu
