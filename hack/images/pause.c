/*
 * pause.c - minimal pod "infra" process for actlet's local pause image.
 *
 * Holds the pod's namespaces open by sleeping forever in pause(), reaps any
 * children re-parented to it (it is PID 1 when the pod shares a PID
 * namespace), and exits 0 on SIGTERM/SIGINT.
 *
 * Build: gcc -static -O2 -o pause hack/images/pause.c
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) {
    (void)sig;
    _exit(0);
}

static void on_chld(int sig) {
    int saved = errno;
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = saved;
}

int main(int argc, char **argv) {
    struct sigaction sa;

    if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
        printf("pause (actlet) 3.9\n");
        return 0;
    }
    if (getpid() != 1)
        fprintf(stderr, "pause: warning: not running as PID 1\n");

    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_term;
    if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0) {
        perror("pause: sigaction(SIGTERM/SIGINT)");
        return 1;
    }
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    if (sigaction(SIGCHLD, &sa, NULL) < 0) {
        perror("pause: sigaction(SIGCHLD)");
        return 2;
    }

    for (;;)
        pause();
    fprintf(stderr, "pause: error: infinite loop terminated\n");
    return 42;
}
