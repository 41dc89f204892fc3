package gpuoffload

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// cudaLibraryEnv names an environment variable that, when set, is the driver library to
// load instead of libcuda.so.1 (and the default NVRTC library), on Linux: the CUDA stand-in of
// package gpuoffload/standin, for tests.
const cudaLibraryEnv = "WARPED_CUDA_LIBRARY"

// cacheEnv names the directory of the compiled-kernel cache, or "off" to turn it off.
const cacheEnv = "WARPED_CUDA_CACHE"

// kernelCache keeps the images NVRTC compiled (PTX, or CUBIN where the driver is older than
// NVRTC) on disk, so that a kernel is compiled once per machine rather than once per run:
// a compile takes a worker tenths of a second, and in a time-warp run the other workers
// soon wait for it (its LPs hold GVT back). An image's file name is a hash of everything
// that makes it: the NVRTC and driver versions, the target, the options, the kernel's name
// and its source. The cache is best effort: an entry that cannot be read, written or
// loaded is compiled again (and rewritten), never an error.
//
// The directory is $WARPED_CUDA_CACHE, else warped/cuda under the user's cache directory
// (os.UserCacheDir). It is off where WARPED_CUDA_CACHE is "off", and where
// WARPED_CUDA_LIBRARY points the backend at another driver (the CUDA stand-in of the
// tests, whose injected compile faults a cache would skip) unless WARPED_CUDA_CACHE names
// a directory.
type kernelCache struct {
	dir string // "" when off
}

// openCache returns the cache the environment asks for.
func openCache() kernelCache {
	switch dir := os.Getenv(cacheEnv); {
	case dir == "off":
		return kernelCache{}
	case dir != "":
		return kernelCache{dir: dir}
	case os.Getenv(cudaLibraryEnv) != "":
		return kernelCache{}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return kernelCache{}
	}
	return kernelCache{dir: filepath.Join(base, "warped", "cuda")}
}

// KernelCacheDir returns the directory where the CUDA backend keeps the kernels it
// compiled, as the environment sets it (see the package doc), or "" when the cache is off.
func KernelCacheDir() string { return openCache().dir }

// key returns the file name of the image made from parts.
func (kernelCache) key(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:16])
}

// load returns the image stored under key, if any.
func (c kernelCache) load(key string) ([]byte, bool) {
	if c.dir == "" {
		return nil, false
	}
	img, err := os.ReadFile(filepath.Join(c.dir, key))
	return img, err == nil && len(img) > 0
}

// store writes img under key, whole or not at all (a temporary file renamed into place, so
// that processes sharing the cache never read half an image).
func (c kernelCache) store(key string, img []byte) {
	if c.dir == "" || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, err = f.Write(img)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(c.dir, key))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}
