# Sourced by the CLI tests in tests/integration/ (this folder is not globbed as tests): a temporary
# directory removed on exit, fail(), and a small text corpus for tiny training runs.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# write_verse FILE: 60 numbered lines of one verse, ~3000 bytes over 27 distinct bytes.
write_verse() { for i in $(seq 1 60); do echo "To be, or not to be, that is the question: $i"; done >"$1"; }
