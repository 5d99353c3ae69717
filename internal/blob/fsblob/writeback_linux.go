package fsblob

import (
	"os"
	"syscall"
)

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE of linux/fs.h: start writing the range's
// dirty pages, wait for nothing.
const syncFileRangeWrite = 0x2

// startWriteback asks the kernel to start writing n bytes of f at off to the disk. It is
// only a hint: durability still comes from the fsync after the last byte, which then
// waits for the object's last few MiB rather than all of it.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		_ = syscall.SyncFileRange(int(fd), off, n, syncFileRangeWrite)
	})
}
