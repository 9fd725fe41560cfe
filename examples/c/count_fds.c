/* count_fds.c: prints how many file descriptors the process has open (besides the one listing them).
 * Used to check that a traced program's exec'd children inherit none of the shim's descriptors.
 */
#include <dirent.h>
#include <stdio.h>

int main(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] != '.') n++;
    }
    closedir(d);
    printf("fds %d\n", n - 1);
    return 0;
}
