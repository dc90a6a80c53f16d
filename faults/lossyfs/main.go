// lossyfs: a loopback FUSE filesystem that remembers what was written since each file's last
// fsync, so a test can lose exactly that, as a disk does when its power fails; it can also
// fail writes as a full disk does, fail every read and write as a failing disk does, and slow
// writes and fsyncs down.
//
// Built on go-fuse (github.com/hanwen/go-fuse/v2, its loopback node): the loopback does the
// I/O, this program only watches it. Used by highwater's disk faults (harness/diskfs.py):
//
//	lossyfs -source DIR -mount MNT -control-file F
//
// mounts DIR at MNT and writes "<port>\n" to F once the mount is ready; its control is HTTP on
// 127.0.0.1:<port>:
//
//	POST /drop-unsynced   lose what was not made durable (the broker must be dead): every file
//	                      created since its last fsync is removed, every other file is cut back to
//	                      its size at its last fsync (or when it was first seen); answers counts
//	POST /full?on=1|0     writes, creations and allocations fail with ENOSPC while on
//	POST /fail?on=1|0     opens, creations, reads, writes and fsyncs fail with EIO while on
//	POST /slow?write_ms=N&fsync_ms=M   each write and each fsync waits that long first
//	GET  /status          the counters and the settings, as JSON
//
// What it does not model, on purpose (docs/architecture.md, "Disks"): overwrites inside a
// file's synced size are kept (only tails and new files are lost), and directory entries
// (mkdir, rename, unlink) are durable at once. Kafka appends to its segments and writes its
// checkpoints by rename, so the tails are what a power loss takes from it.
//
// It exits, unmounting (lazily, so a process still holding a file cannot keep it mounted), on
// SIGTERM or SIGINT and within half a second of its parent's death.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// never is the synced size of a file created since the last fsync: lost whole.
const never = -1

type state struct {
	source string
	mu     sync.Mutex
	synced map[string]int64 // path relative to source -> size durable on disk (or never)

	full     atomic.Bool
	failing  atomic.Bool
	failed   atomic.Int64
	writeMs  atomic.Int64
	fsyncMs  atomic.Int64
	writes   atomic.Int64
	fsyncs   atomic.Int64
	bytes    atomic.Int64
	refused  atomic.Int64
	droppedB atomic.Int64
}

func (s *state) size(rel string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(s.source, rel), &st); err != nil {
		return 0
	}
	return st.Size
}

// seen records a file met for the first time: what it holds now counts as durable.
func (s *state) seen(rel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.synced[rel]; !ok {
		s.synced[rel] = s.size(rel)
	}
}

func (s *state) created(rel string) {
	s.mu.Lock()
	s.synced[rel] = never
	s.mu.Unlock()
}

func (s *state) fsynced(rel string) {
	s.fsyncs.Add(1)
	s.mu.Lock()
	s.synced[rel] = s.size(rel)
	s.mu.Unlock()
}

// truncated: a file cut to n bytes keeps no more than n durable bytes.
func (s *state) truncated(rel string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.synced[rel]; ok && cur != never && cur > n {
		s.synced[rel] = n
	}
}

func (s *state) renamed(from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for rel, n := range s.synced { // a directory's files move with it
		if rel == from || len(rel) > len(from) && rel[:len(from)+1] == from+"/" {
			delete(s.synced, rel)
			s.synced[to+rel[len(from):]] = n
		}
	}
}

func (s *state) removed(rel string) {
	s.mu.Lock()
	delete(s.synced, rel)
	s.mu.Unlock()
}

type dropped struct {
	Removed   int   `json:"removed"`
	Truncated int   `json:"truncated"`
	Bytes     int64 `json:"bytes"`
}

// drop loses what was not made durable, on the source directory itself.
func (s *state) drop() (dropped, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out dropped
	for rel, n := range s.synced {
		p := filepath.Join(s.source, rel)
		cur := s.size(rel)
		if n == never {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return out, err
			}
			out.Removed++
			out.Bytes += cur
			delete(s.synced, rel)
			continue
		}
		if cur > n {
			if err := os.Truncate(p, n); err != nil && !os.IsNotExist(err) {
				return out, err
			}
			out.Truncated++
			out.Bytes += cur - n
		}
	}
	s.droppedB.Add(out.Bytes)
	return out, nil
}

// refuse says whether the disk is full now (and counts the refusal): the caller answers ENOSPC.
func (s *state) refuse() bool {
	if !s.full.Load() {
		return false
	}
	s.refused.Add(1)
	return true
}

// broken says whether the disk fails every I/O now (and counts the failure): the caller answers EIO.
func (s *state) broken() bool {
	if !s.failing.Load() {
		return false
	}
	s.failed.Add(1)
	return true
}

func (s *state) wait(ms *atomic.Int64) {
	if d := ms.Load(); d > 0 {
		time.Sleep(time.Duration(d) * time.Millisecond)
	}
}

// node is go-fuse's loopback node, watched.
type node struct {
	fs.LoopbackNode
	st *state
}

func (n *node) rel(name string) string {
	return filepath.Join(n.EmbeddedInode().Path(nil), name)
}

func (n *node) self() string { return n.EmbeddedInode().Path(nil) }

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.st.broken() {
		return nil, nil, 0, syscall.EIO
	}
	if n.st.refuse() {
		return nil, nil, 0, syscall.ENOSPC
	}
	ino, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return ino, fh, fl, errno
	}
	rel := n.rel(name)
	n.st.created(rel)
	return ino, n.st.wrap(fh, rel), fl, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.st.broken() {
		return nil, 0, syscall.EIO
	}
	rel := n.self()
	n.st.seen(rel)
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return fh, fl, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		n.st.truncated(rel, 0)
	}
	return n.st.wrap(fh, rel), fl, 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	rel := n.self()
	if sz, ok := in.GetSize(); ok {
		n.st.seen(rel)
		if int64(sz) > n.st.size(rel) && n.st.refuse() {
			return syscall.ENOSPC
		}
	}
	if lf, ok := f.(*file); ok {
		f = lf.LoopbackFile
	}
	errno := n.LoopbackNode.Setattr(ctx, f, in, out)
	if sz, ok := in.GetSize(); ok && errno == 0 {
		n.st.truncated(rel, int64(sz))
	}
	return errno
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.st.refuse() {
		return nil, syscall.ENOSPC
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 {
		n.st.removed(n.rel(name))
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	from := n.rel(name)
	to := filepath.Join(newParent.EmbeddedInode().Path(nil), newName)
	n.st.seen(from)
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno == 0 {
		n.st.removed(to)
		n.st.renamed(from, to)
	}
	return errno
}

// file is go-fuse's loopback file handle, watched. It has no PassthroughFd: with kernel
// passthrough the writes would bypass this program.
type file struct {
	*fs.LoopbackFile
	st  *state
	rel string
}

func (s *state) wrap(fh fs.FileHandle, rel string) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &file{lf, s, rel}
	}
	return fh
}

func (f *file) PassthroughFd() (int, bool) { return -1, false }

// write is a write of either form: failed while failing, refused while full, slowed, counted.
func (f *file) write(do func() (uint32, syscall.Errno)) (uint32, syscall.Errno) {
	if f.st.broken() {
		return 0, syscall.EIO
	}
	if f.st.refuse() {
		return 0, syscall.ENOSPC
	}
	f.st.wait(&f.st.writeMs)
	n, errno := do()
	f.st.writes.Add(1)
	f.st.bytes.Add(int64(n))
	return n, errno
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return f.write(func() (uint32, syscall.Errno) { return f.LoopbackFile.Write(ctx, data, off) })
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	return f.write(func() (uint32, syscall.Errno) { return f.LoopbackFile.Writev(ctx, data, off) })
}

func (f *file) Allocate(ctx context.Context, off uint64, sz uint64, mode uint32) syscall.Errno {
	if f.st.refuse() {
		return syscall.ENOSPC
	}
	return f.LoopbackFile.Allocate(ctx, off, sz, mode)
}

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if f.st.broken() {
		return nil, syscall.EIO
	}
	return f.LoopbackFile.Read(ctx, dest, off)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if f.st.broken() {
		return syscall.EIO
	}
	f.st.wait(&f.st.fsyncMs)
	errno := f.LoopbackFile.Fsync(ctx, flags)
	if errno == 0 {
		f.st.fsynced(f.rel)
	}
	return errno
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && int64(sz) > f.st.size(f.rel) && f.st.refuse() {
		return syscall.ENOSPC
	}
	errno := f.LoopbackFile.Setattr(ctx, in, out)
	if sz, ok := in.GetSize(); ok && errno == 0 {
		f.st.truncated(f.rel, int64(sz))
	}
	return errno
}

func (s *state) control(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("/drop-unsynced", func(w http.ResponseWriter, r *http.Request) {
		d, err := s.drop()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(d)
	})
	mux.HandleFunc("/full", func(w http.ResponseWriter, r *http.Request) {
		s.full.Store(r.URL.Query().Get("on") == "1")
		_ = json.NewEncoder(w).Encode(map[string]bool{"full": s.full.Load()})
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		s.failing.Store(r.URL.Query().Get("on") == "1")
		_ = json.NewEncoder(w).Encode(map[string]bool{"failing": s.failing.Load()})
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		for key, v := range map[string]*atomic.Int64{"write_ms": &s.writeMs, "fsync_ms": &s.fsyncMs} {
			ms, err := strconv.ParseInt(r.URL.Query().Get(key), 10, 64)
			if err != nil || ms < 0 {
				http.Error(w, "bad "+key, http.StatusBadRequest)
				return
			}
			v.Store(ms)
		}
		_ = json.NewEncoder(w).Encode(map[string]int64{"write_ms": s.writeMs.Load(), "fsync_ms": s.fsyncMs.Load()})
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		tracked, unsynced := len(s.synced), 0
		for rel, n := range s.synced {
			if n == never || s.size(rel) > n {
				unsynced++
			}
		}
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{
			"full": s.full.Load(), "failing": s.failing.Load(), "failed": s.failed.Load(),
			"write_ms": s.writeMs.Load(), "fsync_ms": s.fsyncMs.Load(),
			"writes": s.writes.Load(), "fsyncs": s.fsyncs.Load(), "bytes": s.bytes.Load(),
			"refused": s.refused.Load(), "dropped_bytes": s.droppedB.Load(),
			"tracked": tracked, "unsynced_files": unsynced,
		})
	})
	_ = http.Serve(ln, mux)
}

func main() {
	source := flag.String("source", "", "the directory whose contents are served")
	mnt := flag.String("mount", "", "where to mount it")
	controlFile := flag.String("control-file", "", "where to write the control port once mounted")
	flag.Parse()
	if *source == "" || *mnt == "" || *controlFile == "" {
		log.Fatal("lossyfs: -source, -mount and -control-file are required")
	}
	st := &state{source: *source, synced: map[string]int64{}}
	var rootSt syscall.Stat_t
	if err := syscall.Stat(*source, &rootSt); err != nil {
		log.Fatalf("lossyfs: %v", err)
	}
	root := &fs.LoopbackRoot{Path: *source, Dev: uint64(rootSt.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, parent *fs.Inode, name string, s *syscall.Stat_t) fs.InodeEmbedder {
		return &node{fs.LoopbackNode{RootData: r}, st}
	}
	root.RootNode = root.NewNode(root, nil, "", &rootSt)
	zero := time.Duration(0)
	server, err := fs.Mount(*mnt, root.RootNode, &fs.Options{
		// no attribute or entry caching: what /drop-unsynced does underneath is seen at once
		AttrTimeout:  &zero,
		EntryTimeout: &zero,
		MountOptions: fuse.MountOptions{
			AllowOther:        true,
			DirectMountStrict: true, // root mounts with mount(2): no fusermount needed
			FsName:            "highwater-lossyfs:" + *source,
			Name:              "lossyfs",
		},
	})
	if err != nil {
		log.Fatalf("lossyfs: mount %s: %v", *mnt, err)
	}
	unmount := func() {
		if err := server.Unmount(); err != nil {
			_ = syscall.Unmount(*mnt, syscall.MNT_DETACH)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		unmount()
		log.Fatalf("lossyfs: control: %v", err)
	}
	go st.control(ln)
	port := ln.Addr().(*net.TCPAddr).Port
	tmp := *controlFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d\n", port)), 0o644); err == nil {
		err = os.Rename(tmp, *controlFile)
	}
	if err != nil {
		unmount()
		log.Fatalf("lossyfs: control file: %v", err)
	}
	parent := os.Getppid()
	go func() { // the owner died (a kill -9 of the test): unmount, never outlive it
		for {
			time.Sleep(500 * time.Millisecond)
			if os.Getppid() != parent {
				_ = syscall.Unmount(*mnt, syscall.MNT_DETACH)
				os.Exit(3)
			}
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		unmount()
	}()
	server.Wait()
}
