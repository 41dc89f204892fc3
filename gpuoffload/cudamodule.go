//go:build linux

package gpuoffload

// The CUDA backend's modules: kernels compiled with NVRTC (or taken from the cache) and
// loaded, and their functions looked up once.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// loadModule compiles src with NVRTC and loads it. If the driver rejects the PTX as too
// new (NVRTC newer than the driver), it compiles to the device's own code (CUBIN) instead.
// An image compiled before, on this machine, comes from the cache (kernelCache).
func (c *cudaBackend) loadModule(name, src string) (uintptr, error) {
	opts := CompileOptions(c.arch/10, c.arch%10)
	m, err := c.loadCompiled(name, src, opts, false)
	var ce *CUDAError
	if errors.As(err, &ce) && cuResult(ce.Code) == cudaErrorUnsupportedPTXVersion {
		opts[0] = fmt.Sprintf("--gpu-architecture=sm_%d", c.arch)
		var err2 error
		if m, err2 = c.loadCompiled(name, src, opts, true); err2 != nil {
			return 0, fmt.Errorf("%w (NVRTC %d.%d is newer than driver %s; compiling to CUBIN "+
				"instead failed too: %v)", err, c.r.major, c.r.minor, c.info.Driver, err2)
		}
		return m, nil
	}
	return m, err
}

// loadCompiled loads src compiled with opts (to PTX, or CUBIN), from the cache when it
// holds a loadable image, else compiling it and storing the image once it loaded.
func (c *cudaBackend) loadCompiled(name, src string, opts []string, cubin bool) (uintptr, error) {
	key := c.cache.key(fmt.Sprintf("nvrtc %d.%d", c.r.major, c.r.minor), "driver "+c.info.Driver,
		fmt.Sprintf("cubin %v", cubin), strings.Join(opts, " "), name, src)
	if img, ok := c.cache.load(key); ok {
		if m, err := c.loadImage(name, img); err == nil {
			return m, nil
		}
	}
	img, err := c.r.compile(name, src, opts, cubin)
	if err != nil {
		return 0, err
	}
	m, err := c.loadImage(name, img)
	if err == nil {
		c.cache.store(key, img)
	}
	return m, err
}

// loadImage loads a PTX or CUBIN image, with the JIT's error log in the error.
func (c *cudaBackend) loadImage(name string, img []byte) (uintptr, error) {
	logBuf := make([]byte, 16<<10)
	var pin runtime.Pinner
	pin.Pin(&logBuf[0])
	defer pin.Unpin()
	opts := [2]int32{cuJITErrorLogBuffer, cuJITErrorLogBufferSizeBytes}
	vals := [2]uintptr{uintptr(unsafe.Pointer(&logBuf[0])), uintptr(len(logBuf) - 1)}
	var m uintptr
	err := c.d.check("cuModuleLoadDataEx", c.d.cuModuleLoadDataEx(&m, &img[0], 2, &opts[0], &vals[0]))
	runtime.KeepAlive(logBuf)
	if err != nil {
		var ce *CUDAError
		if errors.As(err, &ce) {
			ce.Detail = "loading " + name
			if log := cString(unsafe.Pointer(&logBuf[0])); log != "" {
				ce.Detail += ":\n" + strings.TrimSpace(log)
			}
		}
		return 0, err
	}
	c.modules = append(c.modules, m)
	return m, nil
}

// getFunction looks up kernel name in module m and picks its block size.
func (c *cudaBackend) getFunction(m uintptr, name string) (cudaFunc, error) {
	var f cudaFunc
	if err := c.d.check("cuModuleGetFunction", c.d.cuModuleGetFunction(&f.fn, m, name)); err != nil {
		var ce *CUDAError
		if errors.As(err, &ce) {
			ce.Detail = fmt.Sprintf("kernel %q (is it declared extern \"C\" __global__?)", name)
		}
		return f, err
	}
	f.block = 256
	var maxThreads int32
	if c.d.cuFuncGetAttribute(&maxThreads, cuFuncAttributeMaxThreadsPerBlock, f.fn) == cudaSuccess &&
		int(maxThreads) < f.block {
		f.block = max(32, int(maxThreads)&^31)
	}
	return f, nil
}

// function returns k's loaded kernel, compiling it on first use (thread locked, context
// current). It holds mu only to look the kernel up and to record it: a compile holds
// compileMu, so other goroutines' batches of loaded kernels go on meanwhile.
func (c *cudaBackend) function(k *Kernel) (cudaFunc, error) {
	key := k.Name + "\x00" + k.Source
	if f, ok := c.loaded(key); ok {
		return f, nil
	}
	c.compileMu.Lock()
	defer c.compileMu.Unlock()
	if f, ok := c.loaded(key); ok { // compiled while this goroutine waited for compileMu
		return f, nil
	}
	m, err := c.loadModule(k.Name+".cu", Source(k))
	if err != nil {
		return cudaFunc{}, fmt.Errorf("gpuoffload: kernel %s: %w", k.Name, err)
	}
	f, err := c.getFunction(m, k.Name)
	if err != nil {
		return cudaFunc{}, fmt.Errorf("gpuoffload: kernel %s: %w", k.Name, err)
	}
	c.mu.Lock()
	c.funcs[key] = f
	c.mu.Unlock()
	return f, nil
}

// loaded returns the kernel loaded under key, if any.
func (c *cudaBackend) loaded(key string) (cudaFunc, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.funcs[key]
	return f, ok
}
