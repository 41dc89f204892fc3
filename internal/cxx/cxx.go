// Package cxx finds the system C++ compiler, for what builds C++ at run time: the host-C++
// offload backend (package gpuoffload) and the CUDA stand-in for tests (gpuoffload/standin).
package cxx

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Find returns the path of the C++ compiler command compiler, or, with compiler empty, of
// the first of $CXX, c++, g++ and clang++ that is on the PATH.
func Find(compiler string) (string, error) {
	cands := []string{compiler}
	if compiler == "" {
		cands = []string{os.Getenv("CXX"), "c++", "g++", "clang++"}
	}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	if compiler != "" {
		return "", fmt.Errorf("cannot find the C++ compiler %q", compiler)
	}
	return "", errors.New("no C++ compiler found ($CXX, c++, g++, clang++)")
}
