/*
 * fusedisk: the emulated machine's disk, a passthrough FUSE filesystem that sleeps.
 *
 *   fusedisk BACKING_DIR MOUNTPOINT [--read-latency-us N] [--write-latency-us N]
 *            [--sync-latency-us N] [--iops N] [--bandwidth-bps N] [--uid U --gid G]
 *            [--stats FILE] [--timings FILE] [--name NAME]
 *
 * Why it exists: the lab's host disk is a fast virtual disk (a cold 8 kB read takes ~0.06 ms),
 * so a data set that falls out of memory costs almost nothing and the boundaries the lab looks
 * for barely show. Mounted over a cluster's directory, this daemon makes every page-cache miss
 * pay a real device's latency while hits stay in the kernel (kernel_cache: open() keeps a
 * file's cached pages; no writeback cache, so each write() reaches us and its pages stay
 * cached). Design choices, each for a reason:
 *
 * - Latency is a deadline from the request's arrival, reached with clock_nanosleep to an
 *   absolute time (timer slack 1 ns), so the backing file's own cost is absorbed and 0.1-0.5 ms
 *   sleeps are accurate.
 * - --iops N models a device that starts at most N requests per second: one global slot
 *   (slot = max(now, next_slot); next_slot = slot + 1/N), a request completes at
 *   slot + latency. It applies to reads, writes and syncs. --bandwidth-bps N adds each read's
 *   and write's transfer (size/N) after its latency, on one channel shared by all requests, so
 *   concurrent transfers queue as on a real device.
 * - fsync, fdatasync and fsyncdir sleep the sync latency and never call the real fsync: the
 *   emulation must not depend on the host disk's flushing, and a lab cluster is throwaway.
 * - The root lab starts us; we mount as root, then become --uid/--gid (PostgreSQL insists
 *   its data directory is owned by the user it runs as, so every backing file is created as
 *   that user). After that we cannot unmount: the lab does it (umount2), which ends our loop.
 *   The kernel clears the parent-death signal on a credential change, so we re-arm it and
 *   exit if the lab is already gone.
 * - The backing directory is opened before the privilege drop and every operation is relative
 *   to that descriptor, so its parents need not be searchable by the unprivileged user.
 * - hard_remove and nullpath_ok: PostgreSQL unlinks files other backends still hold open;
 *   those keep working through their descriptors and no .fuse_hidden files appear (they would
 *   make DROP DATABASE's rmdir fail). The price: fstat() of an unlinked open file fails with
 *   ESTALE (the kernel sends no handle with it and the library has no path); read, write,
 *   lseek, ftruncate and fsync on it work, and that is all PostgreSQL does with one.
 *   Likewise a hard link is a second kernel inode (its own page cache) for one backing file:
 *   PostgreSQL links only to rename (WAL segments before 15), then unlinks the old name.
 * - `ready` on stdout after mount and privilege drop is the handshake; a failure is one line
 *   on stderr and a non-zero exit. --stats FILE gets the counters as one JSON object, renamed
 *   into place at most every 200 ms when they changed, and at exit.
 * - --timings FILE: the device can change while mounted. The file holds five integers
 *   (read, write and sync latency in µs, iops, bandwidth in bytes/s; 0: no limit) and is
 *   re-read within 50 ms of a change; the stats show the timings in force. The lab loads data
 *   with no latency and then measures on the slow device without a remount, because a remount
 *   would start from an empty page cache (new inodes) and a slow device takes minutes to warm.
 */

#define FUSE_USE_VERSION 312 /* 3.12: fuse_loop_cfg, to allow enough threads for a server */
#define _GNU_SOURCE

#include <fuse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ULL
#define STATS_INTERVAL_NS (200ULL * 1000000ULL)
#define TIMINGS_POLL_NS (50ULL * 1000000ULL)
#define MAX_THREADS 64           /* concurrent backends each wait out their own latency */
#define KERNEL_MAX_BACKGROUND 64 /* the kernel's readahead requests count as background */
#define LONG_TIMEOUT_S 86400.0   /* every change goes through the mount: no need to revalidate */

struct settings {
	const char *backing_dir;
	const char *mountpoint;
	uint64_t read_latency_ns;
	uint64_t write_latency_ns;
	uint64_t sync_latency_ns;
	uint64_t iops;          /* 0: no limit */
	uint64_t bandwidth_bps; /* 0: no transfer time */
	long long uid, gid;     /* -1: keep ours */
	const char *stats_path;
	const char *timings_path;
	const char *name;
};

static struct settings settings = {
	.uid = -1,
	.gid = -1,
	.name = "pgcachelab-disk",
};

static int backing_fd = -1;

static pthread_mutex_t device_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_slot_ns;    /* --iops: when the next request may start */
static uint64_t channel_free_ns; /* --bandwidth-bps: when the current transfer ends */

static atomic_uint_fast64_t count_reads, count_read_bytes, count_writes, count_write_bytes,
	count_syncs, delayed_ns;

static atomic_bool stats_thread_stop;

/* -- time ---------------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / NS_PER_S),
		.tv_nsec = (long)(deadline_ns % NS_PER_S),
	};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * When a request that arrived at `arrival_ns` completes on the emulated device: its latency
 * counted from its slot when the request rate is limited, then its transfer, queued behind
 * the transfers before it when the bandwidth is limited (one channel for the whole device).
 */
static uint64_t completion_ns(uint64_t arrival_ns, uint64_t latency_ns, size_t bytes)
{
	uint64_t start_ns = arrival_ns, done_ns;
	int transfers = settings.bandwidth_bps && bytes;

	if (!settings.iops && !transfers)
		return arrival_ns + latency_ns;
	pthread_mutex_lock(&device_lock);
	if (settings.iops) {
		if (next_slot_ns > start_ns)
			start_ns = next_slot_ns;
		next_slot_ns = start_ns + NS_PER_S / settings.iops;
	}
	done_ns = start_ns + latency_ns;
	if (transfers) {
		if (channel_free_ns > done_ns)
			done_ns = channel_free_ns;
		done_ns += (uint64_t)((double)bytes * NS_PER_S / (double)settings.bandwidth_bps);
		channel_free_ns = done_ns;
	}
	pthread_mutex_unlock(&device_lock);
	return done_ns;
}

/* Sleep out what is left of the emulated device's time for one request. */
static void wait_for_device(uint64_t arrival_ns, uint64_t latency_ns, size_t bytes)
{
	uint64_t deadline_ns, now;

	if (!latency_ns && !settings.iops && !(settings.bandwidth_bps && bytes))
		return;
	deadline_ns = completion_ns(arrival_ns, latency_ns, bytes);
	now = now_ns();
	if (deadline_ns <= now)
		return;
	atomic_fetch_add(&delayed_ns, deadline_ns - now);
	sleep_until_ns(deadline_ns);
}

/* -- paths --------------------------------------------------------------------------------- */

/* FUSE paths are absolute inside the mount; ours are relative to the backing directory. */
static const char *relative(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* -- operations ---------------------------------------------------------------------------- */

static void *disk_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;
	cfg->nullpath_ok = 1;
	cfg->hard_remove = 1;
	/* Without kernel_cache every open() drops the file's cached pages. */
	cfg->kernel_cache = 1;
	cfg->auto_cache = 0;
	cfg->entry_timeout = LONG_TIMEOUT_S;
	cfg->attr_timeout = LONG_TIMEOUT_S;
	cfg->negative_timeout = LONG_TIMEOUT_S;
	/* Write-through: every write() must reach us to pay the device's latency. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* An mtime that moved (our own writes) must not drop a file's cached pages. */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	conn->max_background = KERNEL_MAX_BACKGROUND;
	conn->congestion_threshold = KERNEL_MAX_BACKGROUND * 3 / 4;
	return NULL;
}

static int disk_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int res = fi ? fstat((int)fi->fh, st)
		     : fstatat(backing_fd, relative(path), st, AT_SYMLINK_NOFOLLOW);
	return res == -1 ? -errno : 0;
}

static int disk_access(const char *path, int mask)
{
	return faccessat(backing_fd, relative(path), mask, 0) == -1 ? -errno : 0;
}

static int disk_readlink(const char *path, char *buf, size_t size)
{
	ssize_t res = readlinkat(backing_fd, relative(path), buf, size - 1);
	if (res == -1)
		return -errno;
	buf[res] = '\0';
	return 0;
}

struct open_dir {
	DIR *dir;
	struct dirent *entry;
	off_t offset;
};

static int disk_opendir(const char *path, struct fuse_file_info *fi)
{
	struct open_dir *d = malloc(sizeof(*d));
	int fd, saved;

	if (d == NULL)
		return -ENOMEM;
	fd = openat(backing_fd, relative(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || (d->dir = fdopendir(fd)) == NULL) {
		saved = errno;
		if (fd != -1)
			close(fd);
		free(d);
		return -saved;
	}
	d->entry = NULL;
	d->offset = 0;
	fi->fh = (uintptr_t)d;
	return 0;
}

static int disk_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct open_dir *d = (struct open_dir *)(uintptr_t)fi->fh;

	(void)path;
	(void)flags;
	if (offset != d->offset) {
		seekdir(d->dir, offset);
		d->entry = NULL;
		d->offset = offset;
	}
	for (;;) {
		struct stat st;
		off_t next;

		if (!d->entry) {
			d->entry = readdir(d->dir);
			if (!d->entry)
				break;
		}
		memset(&st, 0, sizeof(st));
		st.st_ino = d->entry->d_ino;
		st.st_mode = (mode_t)d->entry->d_type << 12;
		next = telldir(d->dir);
		if (filler(buf, d->entry->d_name, &st, next, 0))
			break;
		d->entry = NULL;
		d->offset = next;
	}
	return 0;
}

static int disk_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct open_dir *d = (struct open_dir *)(uintptr_t)fi->fh;

	(void)path;
	closedir(d->dir);
	free(d);
	return 0;
}

static int disk_mknod(const char *path, mode_t mode, dev_t rdev)
{
	int res = S_ISFIFO(mode) ? mkfifoat(backing_fd, relative(path), mode)
				 : mknodat(backing_fd, relative(path), mode, rdev);
	return res == -1 ? -errno : 0;
}

static int disk_mkdir(const char *path, mode_t mode)
{
	return mkdirat(backing_fd, relative(path), mode) == -1 ? -errno : 0;
}

static int disk_unlink(const char *path)
{
	return unlinkat(backing_fd, relative(path), 0) == -1 ? -errno : 0;
}

static int disk_rmdir(const char *path)
{
	return unlinkat(backing_fd, relative(path), AT_REMOVEDIR) == -1 ? -errno : 0;
}

/* A tablespace is a symlink in pg_tblspc: its target is kept as given. */
static int disk_symlink(const char *target, const char *path)
{
	return symlinkat(target, backing_fd, relative(path)) == -1 ? -errno : 0;
}

static int disk_rename(const char *from, const char *to, unsigned int flags)
{
	int res = renameat2(backing_fd, relative(from), backing_fd, relative(to), flags);
	return res == -1 ? -errno : 0;
}

static int disk_link(const char *from, const char *to)
{
	return linkat(backing_fd, relative(from), backing_fd, relative(to), 0) == -1 ? -errno : 0;
}

static int disk_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int res = fi ? fchmod((int)fi->fh, mode) : fchmodat(backing_fd, relative(path), mode, 0);
	return res == -1 ? -errno : 0;
}

static int disk_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	int res = fi ? fchown((int)fi->fh, uid, gid)
		     : fchownat(backing_fd, relative(path), uid, gid, AT_SYMLINK_NOFOLLOW);
	return res == -1 ? -errno : 0;
}

static int disk_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, res, saved;

	if (fi)
		return ftruncate((int)fi->fh, size) == -1 ? -errno : 0;
	fd = openat(backing_fd, relative(path), O_WRONLY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	res = ftruncate(fd, size);
	saved = errno;
	close(fd);
	return res == -1 ? -saved : 0;
}

static int disk_utimens(const char *path, const struct timespec ts[2], struct fuse_file_info *fi)
{
	int res = fi ? futimens((int)fi->fh, ts)
		     : utimensat(backing_fd, relative(path), ts, AT_SYMLINK_NOFOLLOW);
	return res == -1 ? -errno : 0;
}

static int disk_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, relative(path), fi->flags | O_CLOEXEC, mode);
	if (fd == -1)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int disk_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, relative(path), fi->flags | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int disk_read(const char *path, char *buf, size_t size, off_t offset,
		     struct fuse_file_info *fi)
{
	uint64_t arrival_ns = now_ns();
	ssize_t res;

	(void)path;
	res = pread((int)fi->fh, buf, size, offset);
	if (res == -1)
		return -errno;
	wait_for_device(arrival_ns, settings.read_latency_ns, (size_t)res);
	atomic_fetch_add(&count_reads, 1);
	atomic_fetch_add(&count_read_bytes, (uint64_t)res);
	return (int)res;
}

static int disk_write(const char *path, const char *buf, size_t size, off_t offset,
		      struct fuse_file_info *fi)
{
	uint64_t arrival_ns = now_ns();
	ssize_t res;

	(void)path;
	res = pwrite((int)fi->fh, buf, size, offset);
	if (res == -1)
		return -errno;
	wait_for_device(arrival_ns, settings.write_latency_ns, (size_t)res);
	atomic_fetch_add(&count_writes, 1);
	atomic_fetch_add(&count_write_bytes, (uint64_t)res);
	return (int)res;
}

static int disk_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return fstatvfs(backing_fd, st) == -1 ? -errno : 0;
}

/* Called at every close() of a descriptor; the backing file stays open until release. */
static int disk_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	return close(dup((int)fi->fh)) == -1 ? -errno : 0;
}

static int disk_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

/* A sync is only time: see the header for why the real fsync is never called. */
static int emulated_sync(void)
{
	uint64_t arrival_ns = now_ns();

	wait_for_device(arrival_ns, settings.sync_latency_ns, 0);
	atomic_fetch_add(&count_syncs, 1);
	return 0;
}

static int disk_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return emulated_sync();
}

static int disk_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return emulated_sync();
}

/* PostgreSQL 16+ extends relations with posix_fallocate: mode 0. */
static int disk_fallocate(const char *path, int mode, off_t offset, off_t length,
			  struct fuse_file_info *fi)
{
	(void)path;
	if (mode == 0)
		return -posix_fallocate((int)fi->fh, offset, length);
	return fallocate((int)fi->fh, mode, offset, length) == -1 ? -errno : 0;
}

static off_t disk_lseek(const char *path, off_t offset, int whence, struct fuse_file_info *fi)
{
	off_t res;

	(void)path;
	res = lseek((int)fi->fh, offset, whence);
	return res == -1 ? -errno : res;
}

static ssize_t disk_copy_file_range(const char *path_in, struct fuse_file_info *fi_in,
				    off_t offset_in, const char *path_out,
				    struct fuse_file_info *fi_out, off_t offset_out, size_t size,
				    int flags)
{
	ssize_t res;

	(void)path_in;
	(void)path_out;
	res = copy_file_range((int)fi_in->fh, &offset_in, (int)fi_out->fh, &offset_out, size,
			      (unsigned int)flags);
	return res == -1 ? -errno : res;
}

static const struct fuse_operations disk_operations = {
	.init = disk_init,
	.getattr = disk_getattr,
	.access = disk_access,
	.readlink = disk_readlink,
	.opendir = disk_opendir,
	.readdir = disk_readdir,
	.releasedir = disk_releasedir,
	.mknod = disk_mknod,
	.mkdir = disk_mkdir,
	.symlink = disk_symlink,
	.unlink = disk_unlink,
	.rmdir = disk_rmdir,
	.rename = disk_rename,
	.link = disk_link,
	.chmod = disk_chmod,
	.chown = disk_chown,
	.truncate = disk_truncate,
	.utimens = disk_utimens,
	.create = disk_create,
	.open = disk_open,
	.read = disk_read,
	.write = disk_write,
	.statfs = disk_statfs,
	.flush = disk_flush,
	.release = disk_release,
	.fsync = disk_fsync,
	.fsyncdir = disk_fsyncdir,
	.fallocate = disk_fallocate,
	.lseek = disk_lseek,
	.copy_file_range = disk_copy_file_range,
};

/* -- statistics ---------------------------------------------------------------------------- */

static uint64_t counters_version(void)
{
	return atomic_load(&count_reads) + atomic_load(&count_writes) + atomic_load(&count_syncs);
}

/* Write the counters to a temporary file and rename it over the stats file: readers never
 * see half an object. */
static void write_stats(void)
{
	char tmp_path[PATH_MAX];
	FILE *out;

	if (snprintf(tmp_path, sizeof(tmp_path), "%s.tmp", settings.stats_path) >=
	    (int)sizeof(tmp_path))
		return;
	out = fopen(tmp_path, "w");
	if (out == NULL)
		return;
	fprintf(out,
		"{\"reads\": %" PRIu64 ", \"read_bytes\": %" PRIu64 ", \"writes\": %" PRIu64
		", \"write_bytes\": %" PRIu64 ", \"syncs\": %" PRIu64 ", \"delayed_us\": %" PRIu64
		", \"read_latency_us\": %" PRIu64 ", \"write_latency_us\": %" PRIu64
		", \"sync_latency_us\": %" PRIu64 ", \"iops\": %" PRIu64
		", \"bandwidth_bps\": %" PRIu64 "}\n",
		(uint64_t)atomic_load(&count_reads), (uint64_t)atomic_load(&count_read_bytes),
		(uint64_t)atomic_load(&count_writes), (uint64_t)atomic_load(&count_write_bytes),
		(uint64_t)atomic_load(&count_syncs), (uint64_t)atomic_load(&delayed_ns) / 1000,
		settings.read_latency_ns / 1000, settings.write_latency_ns / 1000,
		settings.sync_latency_ns / 1000, settings.iops, settings.bandwidth_bps);
	if (fclose(out) != 0 || rename(tmp_path, settings.stats_path) != 0)
		unlink(tmp_path);
}

/*
 * Load new timings when the timings file changed (its mtime and size); true when they did.
 * The request threads read these fields without a lock: each is one aligned 64-bit word, so a
 * request sees the old value or the new one, and either is right for a request in flight.
 */
static bool reload_timings(struct timespec *seen_mtime, off_t *seen_size)
{
	struct stat st;
	unsigned long long read_us, write_us, sync_us, iops, bandwidth;
	FILE *in;
	int fields;

	if (settings.timings_path == NULL || stat(settings.timings_path, &st) != 0)
		return false;
	if (st.st_mtim.tv_sec == seen_mtime->tv_sec && st.st_mtim.tv_nsec == seen_mtime->tv_nsec &&
	    st.st_size == *seen_size)
		return false;
	*seen_mtime = st.st_mtim;
	*seen_size = st.st_size;
	in = fopen(settings.timings_path, "r");
	if (in == NULL)
		return false;
	fields = fscanf(in, "%llu %llu %llu %llu %llu", &read_us, &write_us, &sync_us, &iops,
			&bandwidth);
	fclose(in);
	if (fields != 5)
		return false;
	__atomic_store_n(&settings.read_latency_ns, (uint64_t)read_us * 1000, __ATOMIC_RELAXED);
	__atomic_store_n(&settings.write_latency_ns, (uint64_t)write_us * 1000, __ATOMIC_RELAXED);
	__atomic_store_n(&settings.sync_latency_ns, (uint64_t)sync_us * 1000, __ATOMIC_RELAXED);
	__atomic_store_n(&settings.iops, (uint64_t)iops, __ATOMIC_RELAXED);
	__atomic_store_n(&settings.bandwidth_bps, (uint64_t)bandwidth, __ATOMIC_RELAXED);
	return true;
}

static void *stats_thread_main(void *unused)
{
	uint64_t written_version = UINT64_MAX, next_write_ns = 0;
	struct timespec timings_mtime = {0, 0};
	off_t timings_size = -1;

	(void)unused;
	while (!atomic_load(&stats_thread_stop)) {
		bool retimed = reload_timings(&timings_mtime, &timings_size);
		uint64_t version = counters_version();
		if (retimed || (version != written_version && now_ns() >= next_write_ns)) {
			write_stats();
			written_version = version;
			next_write_ns = now_ns() + STATS_INTERVAL_NS;
		}
		sleep_until_ns(now_ns() + TIMINGS_POLL_NS);
	}
	return NULL;
}

/* -- command line -------------------------------------------------------------------------- */

static void usage_error(const char *message, const char *value)
{
	if (value)
		fprintf(stderr, "fusedisk: %s \"%s\"\n", message, value);
	else
		fprintf(stderr, "fusedisk: %s\n", message);
	exit(2);
}

static long long parse_integer(const char *option, const char *text, long long min,
			       long long max)
{
	char *end;
	long long value;

	if (text == NULL) {
		fprintf(stderr, "fusedisk: option %s needs a value\n", option);
		exit(2);
	}
	errno = 0;
	value = strtoll(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max) {
		fprintf(stderr, "fusedisk: invalid value \"%s\" for option %s\n", text, option);
		exit(2);
	}
	return value;
}

static void parse_command_line(int argc, char **argv)
{
	const long long max_us = 60LL * 1000 * 1000; /* a minute per request is plenty */
	int positional = 0;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;

		if (strncmp(arg, "--", 2) != 0) {
			if (positional == 0)
				settings.backing_dir = arg;
			else if (positional == 1)
				settings.mountpoint = arg;
			else
				usage_error("unexpected argument", arg);
			positional++;
			continue;
		}
		if (strcmp(arg, "--read-latency-us") == 0)
			settings.read_latency_ns =
				(uint64_t)parse_integer(arg, value, 0, max_us) * 1000;
		else if (strcmp(arg, "--write-latency-us") == 0)
			settings.write_latency_ns =
				(uint64_t)parse_integer(arg, value, 0, max_us) * 1000;
		else if (strcmp(arg, "--sync-latency-us") == 0)
			settings.sync_latency_ns =
				(uint64_t)parse_integer(arg, value, 0, max_us) * 1000;
		else if (strcmp(arg, "--iops") == 0)
			settings.iops = (uint64_t)parse_integer(arg, value, 1, 100000000LL);
		else if (strcmp(arg, "--bandwidth-bps") == 0)
			settings.bandwidth_bps = (uint64_t)parse_integer(arg, value, 1, LLONG_MAX);
		else if (strcmp(arg, "--uid") == 0)
			settings.uid = parse_integer(arg, value, 0, UINT32_MAX - 1);
		else if (strcmp(arg, "--gid") == 0)
			settings.gid = parse_integer(arg, value, 0, UINT32_MAX - 1);
		else if (strcmp(arg, "--stats") == 0 && value)
			settings.stats_path = value;
		else if (strcmp(arg, "--timings") == 0 && value)
			settings.timings_path = value;
		else if (strcmp(arg, "--name") == 0 && value)
			settings.name = value;
		else if (strcmp(arg, "--stats") == 0 || strcmp(arg, "--name") == 0 ||
			 strcmp(arg, "--timings") == 0)
			usage_error("option needs a value:", arg);
		else
			usage_error("unknown option", arg);
		i++;
	}
	if (positional != 2)
		usage_error("usage: fusedisk BACKING_DIR MOUNTPOINT [--read-latency-us N] "
			    "[--write-latency-us N] [--sync-latency-us N] [--iops N] "
			    "[--bandwidth-bps N] [--uid U --gid G] [--stats FILE] [--timings FILE] "
			    "[--name NAME]",
			    NULL);
	if ((settings.uid < 0) != (settings.gid < 0))
		usage_error("--uid and --gid go together", NULL);
	if (settings.timings_path && !settings.stats_path)
		usage_error("--timings needs --stats, where the timings in force show", NULL);
	if (strchr(settings.name, ',') || strchr(settings.name, '\\'))
		usage_error("--name cannot contain a comma or a backslash:", settings.name);
}

/* -- privileges ---------------------------------------------------------------------------- */

static int drop_privileges(pid_t original_parent)
{
	if (settings.uid < 0)
		return 0;
	if (setgroups(0, NULL) == -1 || setgid((gid_t)settings.gid) == -1 ||
	    setuid((uid_t)settings.uid) == -1) {
		fprintf(stderr, "fusedisk: cannot become uid %lld gid %lld: %s\n", settings.uid,
			settings.gid, strerror(errno));
		return -1;
	}
	/* The kernel clears the parent-death signal when credentials change. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != original_parent) {
		fprintf(stderr, "fusedisk: the lab that started us is gone\n");
		return -1;
	}
	return 0;
}

/* -- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	pid_t original_parent = getppid();
	char mount_options[PATH_MAX + 128];
	char *fuse_argv[4];
	struct fuse_args args;
	struct fuse *fuse;
	struct fuse_loop_config *loop_config;
	pthread_t stats_thread;
	sigset_t all_signals, previous_signals;
	int stats_thread_started = 0, status;

	parse_command_line(argc, argv);
	umask(0); /* modes are as the kernel passes them, with the caller's umask applied */
	/* Sub-millisecond sleeps need a small timer slack; threads inherit it. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

	backing_fd = open(settings.backing_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (backing_fd == -1) {
		fprintf(stderr, "fusedisk: cannot open the backing directory \"%s\": %s\n",
			settings.backing_dir, strerror(errno));
		return 1;
	}

	snprintf(mount_options, sizeof(mount_options),
		 "allow_other,default_permissions,fsname=%s,subtype=pgcachelab-disk",
		 settings.name);
	fuse_argv[0] = argv[0];
	fuse_argv[1] = "-o";
	fuse_argv[2] = mount_options;
	fuse_argv[3] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(3, fuse_argv);

	fuse = fuse_new(&args, &disk_operations, sizeof(disk_operations), NULL);
	if (fuse == NULL) {
		fprintf(stderr, "fusedisk: fuse_new failed (bad mount options?)\n");
		return 1;
	}
	if (fuse_mount(fuse, settings.mountpoint) != 0) {
		fprintf(stderr, "fusedisk: cannot mount on \"%s\"\n",
			settings.mountpoint);
		fuse_destroy(fuse);
		return 1;
	}
	if (drop_privileges(original_parent) != 0 ||
	    fuse_set_signal_handlers(fuse_get_session(fuse)) != 0) {
		fuse_unmount(fuse);
		fuse_destroy(fuse);
		return 1;
	}

	if (settings.stats_path) {
		/* Signals belong to the loop's thread, whose sleep they must interrupt. */
		sigfillset(&all_signals);
		pthread_sigmask(SIG_BLOCK, &all_signals, &previous_signals);
		stats_thread_started =
			pthread_create(&stats_thread, NULL, stats_thread_main, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &previous_signals, NULL);
	}

	printf("ready\n");
	fflush(stdout);

	loop_config = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(loop_config, MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(loop_config, MAX_THREADS);
	status = fuse_loop_mt(fuse, loop_config);
	fuse_loop_cfg_destroy(loop_config);

	if (stats_thread_started) {
		atomic_store(&stats_thread_stop, true);
		pthread_join(stats_thread, NULL);
		write_stats();
	}
	fuse_remove_signal_handlers(fuse_get_session(fuse));
	/* As root this unmounts; after the privilege drop the lab's umount2 already did. */
	fuse_unmount(fuse);
	fuse_destroy(fuse);
	return status < 0 ? 1 : 0;
}
