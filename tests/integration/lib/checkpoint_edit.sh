# Sourced by CLI tests that damage checkpoints on purpose: edits of a safetensors file's metadata
# and tensors that keep it well-formed (and its checksums matching unless the edit is about them),
# so that only the one thing under test is wrong with it.

# set_metadata FILE KEY VALUE: sets __metadata__[KEY] (a string); set_metadata FILE KEY deletes it.
set_metadata() {
  python3 - "$@" <<'PY'
import json, struct, sys
path, key = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
if len(sys.argv) > 3: header["__metadata__"][key] = sys.argv[3]
else: del header["__metadata__"][key]
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
}

# poison_tensor FILE TENSOR VALUE: sets the F32 tensor's second element to VALUE (nan, inf) and
# updates its crc32, so the file verifies and only the value is wrong.
poison_tensor() {
  python3 - "$@" <<'PY'
import json, struct, sys, zlib
path, name, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
raw = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
begin, end = header[name]["data_offsets"]
at = 8 + n + begin + 4
raw[at:at + 4] = struct.pack("<f", value)
meta = header["__metadata__"]
crc = json.loads(meta["crc32"])
crc[name] = "%08x" % zlib.crc32(bytes(raw[8 + n + begin:8 + n + end]))
meta["crc32"] = json.dumps(crc)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + bytes(raw[8 + n:]))
PY
}
