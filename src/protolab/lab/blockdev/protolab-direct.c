/* protolab-direct.so: NFS-Ganesha's reads and writes of the lab pool's files past the host's page cache.
 *
 * NFS-Ganesha's VFS FSAL has no direct-I/O option: its reads of data already in RAM never reach the pool's device
 * model, and its buffered random writes pile up as btrfs delalloc extents whose metadata reservations serialise
 * every writer of the file behind btrfs_inode_lock (measured: 6-20 ms per 4 KiB write over a model that answers
 * writes in 0.5 ms). tgt opens its LUN with O_DIRECT (bsoflags=direct) and fio the local path with direct=1; this
 * library, preloaded into ganesha.nfsd by the lab when the pool has a device model, gives the NFS path the same:
 *
 *   - a file descriptor of a regular file on btrfs (the pool; ganesha's own config and log live elsewhere) gets a
 *     twin opened O_DIRECT through /proc/self/fd, with the same access mode, on its first read or write;
 *   - ganesha's modules are loaded without RTLD_DEEPBIND (below), so that their calls reach this library;
 *   - a read or write whose offset and length are whole 4 KiB blocks goes to the twin through an aligned bounce
 *     buffer (ganesha's buffers have no alignment); anything else goes to the original descriptor unchanged
 *     (btrfs keeps the two coherent: a direct read flushes dirty pages of its range, a direct write drops them).
 *
 * It runs nothing, reads no configuration and touches no file but the twins of descriptors ganesha already has.
 * Built by scripts/install-deps.sh into .deps/blockdev/lib; the lab checks it is root's before preloading it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define BLOCK 4096
#define MAX_FD 65536
#define MAX_IO (16 << 20)
#define BTRFS_MAGIC 0x9123683E

struct twin {
    int state; /* 0 unknown, 1 twin open, -1 not eligible */
    int fd;
    dev_t dev;
    ino_t ino;
    int accmode;
};

static struct twin twins[MAX_FD];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread char *bounce;
static __thread size_t bounce_size;

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_preadv)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_preadv2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);

__attribute__((constructor)) static void init(void)
{
    real_pread = dlsym(RTLD_NEXT, "pread64");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite64");
    real_preadv = dlsym(RTLD_NEXT, "preadv64");
    real_pwritev = dlsym(RTLD_NEXT, "pwritev64");
    real_preadv2 = dlsym(RTLD_NEXT, "preadv64v2");
    real_pwritev2 = dlsym(RTLD_NEXT, "pwritev64v2");
}

/* The O_DIRECT twin of fd, or -1 when fd is not a regular file on btrfs (or the twin cannot be opened). */
static int twin_of(int fd)
{
    struct stat st;
    struct statfs sf;
    char path[64];
    int flags, accmode, out = -1;

    if (fd < 0 || fd >= MAX_FD || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_DIRECT))
        return -1;
    accmode = flags & O_ACCMODE;
    pthread_mutex_lock(&lock);
    struct twin *t = &twins[fd];
    if (t->state != 0 && (t->dev != st.st_dev || t->ino != st.st_ino || t->accmode != accmode)) {
        if (t->state == 1) /* fd was closed and reused for another file or mode: its old twin goes */
            close(t->fd);
        t->state = 0;
    }
    if (t->state == 0) {
        t->state = -1;
        t->dev = st.st_dev;
        t->ino = st.st_ino;
        t->accmode = accmode;
        if (fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == (unsigned long)BTRFS_MAGIC) {
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            int d = (int)syscall(SYS_openat, AT_FDCWD, path, accmode | O_DIRECT | O_CLOEXEC);
            if (d >= 0) {
                t->fd = d;
                t->state = 1;
            }
        }
    }
    if (t->state == 1)
        out = t->fd;
    pthread_mutex_unlock(&lock);
    return out;
}

static size_t iov_total(const struct iovec *iov, int n)
{
    size_t s = 0;
    for (int i = 0; i < n; i++)
        s += iov[i].iov_len;
    return s;
}

static int aligned(off_t off, size_t len)
{
    return len > 0 && len <= MAX_IO && off % BLOCK == 0 && len % BLOCK == 0;
}

static char *buffer(size_t len)
{
    if (bounce_size < len) {
        free(bounce);
        bounce = NULL;
        bounce_size = 0;
        if (posix_memalign((void **)&bounce, BLOCK, len) != 0) {
            bounce = NULL;
            return NULL;
        }
        bounce_size = len;
    }
    return bounce;
}

/* The twin and the bounce buffer for a request of n buffers at off, or NULL when it goes the buffered way. */
static char *take(int fd, const struct iovec *iov, int n, off_t off, size_t *len, int *twin)
{
    *len = iov_total(iov, n);
    *twin = aligned(off, *len) ? twin_of(fd) : -1;
    return *twin >= 0 ? buffer(*len) : NULL;
}

static ssize_t direct_readv(int fd, const struct iovec *iov, int n, off_t off)
{
    size_t len;
    int d;
    char *b = take(fd, iov, n, off, &len, &d);
    if (b == NULL)
        return -2;
    ssize_t got = real_pread(d, b, len, off);
    if (got < 0 && errno == EINVAL)
        return -2; /* the filesystem refused direct I/O here: the buffered way */
    if (got <= 0)
        return got;
    size_t left = (size_t)got, at = 0;
    for (int i = 0; i < n && left > 0; i++) {
        size_t c = iov[i].iov_len < left ? iov[i].iov_len : left;
        memcpy(iov[i].iov_base, b + at, c);
        at += c;
        left -= c;
    }
    return got;
}

static ssize_t direct_writev(int fd, const struct iovec *iov, int n, off_t off)
{
    size_t len;
    int d;
    char *b = take(fd, iov, n, off, &len, &d);
    if (b == NULL)
        return -2;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(b + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    ssize_t put = real_pwrite(d, b, len, off);
    return put < 0 && errno == EINVAL ? -2 : put;
}

/* -2 from direct_*: not taken (unaligned, not a pool file, no buffer): the call goes on unchanged. */

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
    struct iovec v = {buf, len};
    ssize_t r = direct_readv(fd, &v, 1, off);
    return r != -2 ? r : real_pread(fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    struct iovec v = {(void *)buf, len};
    ssize_t r = direct_writev(fd, &v, 1, off);
    return r != -2 ? r : real_pwrite(fd, buf, len, off);
}

ssize_t preadv64(int fd, const struct iovec *iov, int n, off_t off)
{
    ssize_t r = direct_readv(fd, iov, n, off);
    return r != -2 ? r : real_preadv(fd, iov, n, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off)
{
    ssize_t r = direct_writev(fd, iov, n, off);
    return r != -2 ? r : real_pwritev(fd, iov, n, off);
}

ssize_t preadv64v2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
    ssize_t r = (flags == 0 && off >= 0) ? direct_readv(fd, iov, n, off) : -2;
    return r != -2 ? r : real_preadv2(fd, iov, n, off, flags);
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
    ssize_t r = (flags == 0 && off >= 0) ? direct_writev(fd, iov, n, off) : -2;
    return r != -2 ? r : real_pwritev2(fd, iov, n, off, flags);
}

/* NFS-Ganesha loads its FSAL modules with RTLD_DEEPBIND, which binds a module's libc calls before any preloaded
 * library: without this, the functions above would never see libfsalvfs.so's reads and writes. */
void *dlopen(const char *file, int mode)
{
    static void *(*real_dlopen)(const char *, int);
    if (real_dlopen == NULL)
        real_dlopen = dlsym(RTLD_NEXT, "dlopen");
    return real_dlopen(file, mode & ~RTLD_DEEPBIND);
}

/* On x86_64 the unsuffixed names are the same functions; a caller may bind either. */
ssize_t pread(int fd, void *buf, size_t len, off_t off) __attribute__((alias("pread64")));
ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) __attribute__((alias("pwrite64")));
ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off) __attribute__((alias("preadv64")));
ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) __attribute__((alias("pwritev64")));
ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags) __attribute__((alias("preadv64v2")));
ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags) __attribute__((alias("pwritev64v2")));
