// The normlab command (placeholder until the demo lands).
#include <cstdio>
int main() { std::puts("normlab"); return 0; }
