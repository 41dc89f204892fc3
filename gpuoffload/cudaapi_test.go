//go:build linux

package gpuoffload

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"
)

// TestBindingSignatures registers every driver and NVRTC function type with purego
// against some libc function (without calling it), so that a signature purego cannot call
// shows up here and not only on a GPU machine.
func TestBindingSignatures(t *testing.T) {
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Skipf("no libc.so.6: %v", err)
	}
	addr, err := purego.Dlsym(libc, "abs")
	require.NoError(t, err)
	var d driverAPI
	var r nvrtcAPI
	for _, s := range append(d.symbols(), r.symbols()...) {
		require.NotPanics(t, func() { purego.RegisterFunc(s.fptr, addr) }, s.name)
		require.False(t, reflect.ValueOf(s.fptr).Elem().IsNil(), s.name)
	}
	require.Len(t, d.symbols(), reflect.TypeOf(d).NumField()-2, "every driver function is in symbols()")
	require.Len(t, r.symbols(), reflect.TypeOf(r).NumField()-5, "every NVRTC function is in symbols()")
}

func TestBindMissingSymbol(t *testing.T) {
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Skipf("no libc.so.6: %v", err)
	}
	var f func() int32
	err = bindAll(libc, "libc.so.6", []symbol{{"cuNoSuchFunction", &f, false}})
	require.ErrorContains(t, err, "libc.so.6 has no symbol cuNoSuchFunction")
	require.NoError(t, bindAll(libc, "libc.so.6", []symbol{{"cuNoSuchFunction", &f, true}}), "optional")
	require.Nil(t, f)
}

func TestNVRTCNotFound(t *testing.T) {
	_, err := loadNVRTC([]string{"/nonexistent/libnvrtc.so.12", "libnvrtc-does-not-exist.so"})
	require.ErrorContains(t, err, "no NVRTC")
	require.ErrorContains(t, err, "/nonexistent/libnvrtc.so.12, libnvrtc-does-not-exist.so")
	require.ErrorContains(t, err, nvrtcEnv)

	t.Setenv(nvrtcEnv, "/opt/x/libnvrtc.so")
	require.Equal(t, []string{"/opt/x/libnvrtc.so"}, nvrtcCandidates(12040), "the library named, alone")
	t.Setenv(nvrtcEnv, "")
	t.Setenv(cudaLibraryEnv, "")
	c := nvrtcCandidates(12040)
	require.Equal(t, []string{"libnvrtc.so.12", "libnvrtc.so", "libnvrtc.so.13"}, c[:3])
}

func TestPickArch(t *testing.T) {
	r := &nvrtcAPI{major: 12, minor: 4, path: "libnvrtc.so.12"}
	a, err := pickArch(90, []int{50, 60, 70, 80, 89, 90}, r)
	require.NoError(t, err)
	require.Equal(t, 90, a)
	a, err = pickArch(120, []int{50, 60, 70, 80, 89, 90}, r)
	require.NoError(t, err)
	require.Equal(t, 90, a, "a newer device gets the newest PTX, which the driver compiles")
	a, err = pickArch(86, nil, r)
	require.NoError(t, err)
	require.Equal(t, 86, a)
	_, err = pickArch(35, []int{50, 60}, r)
	require.ErrorContains(t, err, "none at or below the device's 3.5")
}

func TestCUDAUnavailableSaysWhy(t *testing.T) {
	_, err := NewCUDA(0)
	if err == nil {
		t.Skip("CUDA is available here")
	}
	require.NotEmpty(t, err.Error())
	t.Logf("NewCUDA(0): %v", err)
	_, err = NewCUDA(-1)
	require.Error(t, err)
}

// TestDlopenSaysWhy checks that a library that does not load gives its reason, every time
// and from any goroutine (dlerror is per thread: see dlopen).
func TestDlopenSaysWhy(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range errs {
		wg.Go(func() {
			for range 200 {
				if _, err := dlopen("libwarped-no-such-library.so.9", purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil ||
					!strings.Contains(err.Error(), "libwarped-no-such-library.so.9") {
					errs[g] = fmt.Errorf("dlopen's error %v does not name the library", err)
					return
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}
