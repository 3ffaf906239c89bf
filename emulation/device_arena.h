// Emulated device memory: one reserved address range from which cudaMalloc carves allocations.
// Outside kernels, copies and library calls the range is inaccessible (PROT_NONE), so host code
// that dereferences a device pointer faults at once, and the fault handler names the address and
// the allocation instead of letting the bug wait for the first real GPU. GATTN_EMU_GUARD=0 turns
// the protection off (e.g. to look at device memory in a debugger).
#pragma once
#include <cstddef>
#include <string>

namespace gattn::emu {

struct Allocation {
  const char* begin = nullptr;
  std::size_t bytes = 0;
};

void* device_malloc(std::size_t bytes);  // nullptr when the emulated device is full
bool device_free(void* p);               // false for a pointer that is not an allocation's start
// The device allocation holding p (bytes 0 when p is not device memory).
Allocation find_device_allocation(const void* p);
bool is_device_pointer(const void* p);

// Pinned host memory (cudaHostAlloc): host memory that kernels and copies may also use.
void* pinned_malloc(std::size_t bytes);
bool pinned_free(void* p);
Allocation find_pinned_allocation(const void* p);

// Whether [p, p + bytes) lies inside one device or pinned allocation; `why` says otherwise.
bool device_accessible_range(const void* p, std::size_t bytes, std::string& why);

// While one of these lives, device memory is readable and writable by this process (nested scopes
// are counted). Every emulated kernel launch, copy and library call holds one.
class DeviceAccess {
 public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
};

// Bytes the emulated device offers (cudaMemGetInfo): GATTN_EMU_DEVICE_MEMORY_MB, default 8 GiB.
std::size_t device_capacity();
std::size_t device_bytes_in_use();

}  // namespace gattn::emu
