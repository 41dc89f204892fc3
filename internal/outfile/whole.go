package outfile

import "io"

// Outputs written whole: one file, or several as one.

// WriteFile writes data to path as one output file (see the package documentation).
func WriteFile(path string, data []byte) error { return To{}.WriteFile(path, data) }

// WriteFile writes data to path as one output file, "-" being t's standard output.
func (t To) WriteFile(path string, data []byte) error {
	f, err := t.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// Named is one file of WriteAll: its path and its whole content.
type Named struct {
	Path string
	Data []byte
}

// WriteAll writes files as one output: every file to its temporary file first, and only
// once all are written (a full disk shows there) renames them into place, so that a
// failure publishes none of them and replaces no file of an earlier run. It returns the
// paths written.
func WriteAll(files []Named) ([]string, error) {
	opened := make([]*File, 0, len(files))
	defer func() {
		for _, f := range opened {
			f.Abort() // after Commit, nothing
		}
	}()
	for _, n := range files {
		f, err := Create(n.Path)
		if err != nil {
			return nil, err
		}
		opened = append(opened, f)
		if _, err := f.Write(n.Data); err != nil {
			return nil, err
		}
		if err := f.sync(); err != nil { // before any file is published
			return nil, err
		}
	}
	paths := make([]string, 0, len(files))
	for i, f := range opened {
		if err := f.Commit(); err != nil {
			return paths, err
		}
		paths = append(paths, files[i].Path)
	}
	return paths, nil
}

// WriteTo writes path with what write writes to it, committing it only when write and
// the file's writes succeed.
func WriteTo(path string, write func(w io.Writer) error) error { return To{}.WriteTo(path, write) }

// WriteTo is the package's WriteTo, "-" being t's standard output.
func (t To) WriteTo(path string, write func(w io.Writer) error) error {
	f, err := t.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		if f.err != nil {
			return f.err
		}
		return fail(path, err)
	}
	return f.Commit()
}
