/* Built only with TTAP_PORTABLE (the editor packages' binary). The static libstdc++ of GCC 12
 * references arc4random, which glibc has only since 2.36; defining it here keeps the binary's
 * glibc floor at 2.34 (Ubuntu 22.04, RHEL 9). getrandom is glibc 2.25. */
#include <stdint.h>
#include <sys/random.h>

uint32_t arc4random(void) {
  uint32_t value = 0;
  while (getrandom(&value, sizeof(value), 0) != (ssize_t)sizeof(value)) {
  }
  return value;
}
