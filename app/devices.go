package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/gpuoffload"
	"github.com/warpedgo/warped/internal/outfile"
	"github.com/warpedgo/warped/models/phold"
)

// devicesCommand is `warped devices [--write-kernels DIR]`: it lists the offload backends
// and their devices, saying why one is unavailable, and can write the CUDA source of the
// kernels for inspection.
func (c *Command) devicesCommand(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("devices", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("write-kernels", "", "write the CUDA source of the XORWOW kernel and PHOLD's batch kernel into `DIR`")
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s devices [--write-kernels DIR]\n\n"+
				"Lists the GPU offload backends (--gpu %s) and their devices.\n", c.name, strings.Join(gpuoffload.Modes(), "|"))
			return exitOK
		}
		fmt.Fprintf(stderr, "%s devices: %v\n", c.name, err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s devices: unexpected argument %q\n", c.name, fs.Arg(0))
		return exitUsage
	}
	if err := checkEmpty(fs); err != nil {
		fmt.Fprintf(stderr, "%s devices: %v\n", c.name, err)
		return exitUsage
	}
	fmt.Fprintln(stdout, "Offload backends:")
	for _, d := range gpuoffload.Devices() {
		fmt.Fprintf(stdout, "  %s\n", d)
	}
	if c := gpuoffload.KernelCacheDir(); c != "" {
		fmt.Fprintf(stdout, "Compiled CUDA kernels are cached in %s (WARPED_CUDA_CACHE=DIR names another, =off turns it off)\n", c)
	} else {
		fmt.Fprintln(stdout, "Compiled CUDA kernels are not cached (WARPED_CUDA_CACHE=DIR turns the cache on)")
	}
	if *dir != "" {
		if err := writeKernels(*dir, stdout); err != nil {
			fmt.Fprintf(stderr, "%s devices: %v\n", c.name, err)
			return exitRun
		}
	}
	return exitOK
}

// writeKernels writes the complete CUDA text of each kernel, as the CUDA backend compiles
// it, into dir.
func writeKernels(dir string, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct{ name, src string }{
		{"xorwow.cu", gpuoffload.BuiltinSource()},
		{"phold.cu", gpuoffload.Source(phold.BatchKernel(phold.DefaultConfig()))},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := outfile.WriteFile(p, []byte(f.src)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	fmt.Fprintf(stdout, "compile one as the CUDA backend does, for compute capability 9.0 (an H100; give your GPU's): "+
		"nvcc -ptx %s FILE.cu\n", strings.Join(gpuoffload.CompileOptions(9, 0), " "))
	return nil
}
