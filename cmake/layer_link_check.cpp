// The program of every <layer>_link_check target (cmake/layers.cmake): it does nothing, and links
// one layer's every object file against only the layers below it, so a call up the stack fails
// the build. It is never run.
int main() { return 0; }
