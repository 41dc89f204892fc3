//go:build linux

package gpuoffload

// What the CUDA backend knows of a device: its description, the architecture to compile
// for, and the list of devices.

import (
	"errors"
	"fmt"
	"unsafe"
)

// pickArch returns the compute capability to compile for: the device's own when NVRTC
// supports it (or does not say what it supports), else the highest supported one below it,
// whose PTX the driver compiles for the device.
func pickArch(cc int, supported []int, r *nvrtcAPI) (int, error) {
	if len(supported) == 0 {
		return cc, nil
	}
	best := -1
	for _, a := range supported {
		if a <= cc {
			best = a
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("NVRTC %d.%d (%s) compiles for compute capabilities %v, "+
			"none at or below the device's %d.%d", r.major, r.minor, r.path, supported, cc/10, cc%10)
	}
	return best, nil
}

// deviceInfo describes device ordinal.
func deviceInfo(d *driverAPI, ordinal int) (Device, int32, error) {
	info := Device{Backend: "cuda", Index: ordinal, Driver: versionString(d.version)}
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return info, 0, err
	}
	if n == 0 {
		return info, 0, errors.New("the NVIDIA driver reports no CUDA device")
	}
	if ordinal < 0 || ordinal >= int(n) {
		return info, 0, fmt.Errorf("there is no CUDA device %d (%d devices: 0..%d)", ordinal, n, n-1)
	}
	var dev int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return info, 0, err
	}
	var name [256]byte
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return info, 0, err
	}
	info.Name = cString(unsafe.Pointer(&name[0]))
	attr := func(a int32) (int, error) {
		var v int32
		err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, a, dev))
		return int(v), err
	}
	var err error
	if info.CCMajor, err = attr(cuDeviceAttributeComputeCapabilityMajor); err != nil {
		return info, 0, err
	}
	if info.CCMinor, err = attr(cuDeviceAttributeComputeCapabilityMinor); err != nil {
		return info, 0, err
	}
	if info.Multiprocessors, err = attr(cuDeviceAttributeMultiprocessorCount); err != nil {
		return info, 0, err
	}
	var mem uintptr
	if err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&mem, dev)); err != nil {
		return info, 0, err
	}
	info.MemoryBytes = uint64(mem)
	return info, dev, nil
}

// cudaDevices lists the CUDA devices, opening each to see whether it is usable.
func cudaDevices() []Device {
	d, err := loadDriverOnce()
	if err != nil {
		return []Device{{Backend: "cuda", Index: -1, Reason: reason(err)}}
	}
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil || n == 0 {
		why := "the NVIDIA driver reports no CUDA device"
		if err != nil {
			why = err.Error()
		}
		return []Device{{Backend: "cuda", Index: -1, Driver: versionString(d.version), Reason: why}}
	}
	var out []Device
	for i := range int(n) {
		info, _, err := deviceInfo(d, i)
		if err != nil {
			info.Reason = reason(err)
			out = append(out, info)
			continue
		}
		if r, err := loadNVRTCOnce(); err == nil {
			info.Compiler = fmt.Sprintf("NVRTC %d.%d (%s)", r.major, r.minor, r.path)
		}
		c, err := NewCUDA(i)
		if err != nil {
			info.Reason = firstLine(reason(err))
		} else {
			info.Available = true
			if err := c.Close(); err != nil {
				info.Available, info.Reason = false, firstLine(reason(err))
			}
		}
		out = append(out, info)
	}
	return out
}
