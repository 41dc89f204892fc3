package outfile

import "golang.org/x/sys/unix"

// pseudoFS returns the name of the pseudo file system dir is in (proc, sysfs), or "".
func pseudoFS(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return ""
	}
	switch st.Type {
	case unix.PROC_SUPER_MAGIC:
		return "/proc"
	case unix.SYSFS_MAGIC:
		return "/sys"
	case unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return "a cgroup file system"
	}
	return ""
}

// writable fails unless this process may create files in dir (a read-only file system
// fails even for root).
func writable(dir string) error { return unix.Access(dir, unix.W_OK) }
