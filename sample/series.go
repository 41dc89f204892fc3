package sample

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/warpedgo/warped/kernel"
)

// SeriesColumns are the header of a series file (WriteSeries): one line per point of a
// model's time series (kernel.SeriesPoint), in Result.Series' order. Read only.
var SeriesColumns = []string{"time", "lp", "series", "value"}

// WriteSeries writes a model's time series to out as CSV with a header (SeriesColumns).
func WriteSeries(out io.Writer, points []kernel.SeriesPoint) error {
	bw := bufio.NewWriterSize(out, 64<<10)
	cw := csv.NewWriter(bw)
	if err := cw.Write(SeriesColumns); err != nil {
		return fmt.Errorf("write series: %w", err)
	}
	rec := make([]string, 4)
	for _, p := range points {
		rec[0] = strconv.FormatFloat(p.Time, 'g', -1, 64)
		rec[1] = strconv.FormatUint(uint64(p.LP), 10)
		rec[2] = p.Series
		rec[3] = strconv.FormatFloat(p.Value, 'g', -1, 64)
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write series: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write series: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write series: %w", err)
	}
	return nil
}

// IsSeries reports whether the first line of a file (without its line end) is a series
// file's header.
func IsSeries(firstLine string) bool {
	return strings.TrimRight(firstLine, "\r") == strings.Join(SeriesColumns, ",")
}

// ReadSeries reads a series file written by WriteSeries.
func ReadSeries(in io.Reader) ([]kernel.SeriesPoint, error) {
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = -1 // the header is checked first, then every record
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty series file")
	} else if err != nil {
		return nil, fmt.Errorf("read series header: %w", err)
	}
	if !IsSeries(strings.Join(head, ",")) {
		return nil, fmt.Errorf("series file header is %q, want %q: is it a --series-file?", strings.Join(head, ","), strings.Join(SeriesColumns, ","))
	}
	cr.FieldsPerRecord = len(SeriesColumns)
	var out []kernel.SeriesPoint
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if lastCutShort(cr, err) {
				return out, fmt.Errorf("series line %d: %w", line, ErrCutShort)
			}
			return nil, fmt.Errorf("read series: %w", err)
		}
		t, err1 := strconv.ParseFloat(rec[0], 64)
		lp, err2 := strconv.ParseUint(rec[1], 10, 32)
		v, err3 := strconv.ParseFloat(rec[3], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("series line %d: %w", line, err)
		}
		out = append(out, kernel.SeriesPoint{Time: t, LP: kernel.LPID(lp), Series: rec[2], Value: v})
	}
}
