package sample

import (
	"bytes"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warpedgo/warped/kernel"
)

func someSamples() []kernel.Sample {
	return []kernel.Sample{
		{Elapsed: 1500 * time.Microsecond, GVT: 2.5, Worker: 0, Processed: 100, Committed: 90, RolledBack: 10,
			PrimaryRollbacks: 2, SecondaryRollbacks: 1, AntiMessages: 7, SafeEvents: 3, PendingEvents: 40,
			HistoryLength: 12, MemoryBytes: 1 << 20, OffloadBatches: 4, Idle: 250 * time.Microsecond,
			Processing: time.Millisecond, GVTTime: 125 * time.Microsecond, Comm: 125 * time.Microsecond,
			CPUWait: 3 * time.Millisecond, WorkerThreads: 2},
		{Elapsed: 1500 * time.Microsecond, GVT: 2.5, Rank: 1, Worker: 1, Processed: 5, Committed: -3, RolledBack: 8,
			PendingEvents: -1, HistoryLength: -1},
		{Elapsed: 2 * time.Millisecond, GVT: math.Inf(1), Worker: 0, Final: true},
		{Elapsed: 2 * time.Millisecond, GVT: math.Inf(1), Rank: 1, Worker: -1, PendingEvents: -1, HistoryLength: -1,
			Comm: time.Millisecond, GVTTime: 500 * time.Microsecond, Idle: 500 * time.Microsecond, Final: true},
		// A gpu run's: the device, with its iterations and bound (infinite: null in JSON).
		{Elapsed: 3 * time.Millisecond, GVT: 4, Processed: 50, Committed: 45, RolledBack: 5, PendingEvents: 9,
			HistoryLength: 3, DeviceIterations: 64, DeviceBound: 0.5},
		{Elapsed: 4 * time.Millisecond, GVT: math.Inf(1), Processed: 7, Committed: 7, DeviceIterations: 11,
			DeviceBound: math.Inf(1), Final: true},
	}
}

// TestRoundTrip writes samples in both formats and reads them back.
func TestRoundTrip(t *testing.T) {
	for _, format := range Formats() {
		buf, in := written(t, format)
		rows, err := Read(buf)
		require.NoError(t, err, format)
		require.Len(t, rows, len(in))
		for i, s := range in {
			require.Equal(t, FromKernel(s, rows[i].ResidentBytes), rows[i], format)
			if _, err := os.Stat("/proc/self/statm"); err == nil {
				require.NotZero(t, rows[i].ResidentBytes, "the process's resident memory, with every row")
			}
			if i > 0 && s.Elapsed == in[i-1].Elapsed {
				require.Equal(t, rows[i-1].ResidentBytes, rows[i].ResidentBytes, "one reading per set of rows")
			}
		}
	}
}

// written returns someSamples written in format by a Writer, and the samples.
func written(t *testing.T, format string) (*bytes.Buffer, []kernel.Sample) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, format, 0)
	require.NoError(t, err)
	in := someSamples()
	for _, s := range in {
		w.Add(s)
	}
	require.NoError(t, w.Close())
	require.Zero(t, w.Dropped())
	return &buf, in
}

// TestCSVHeader checks the CSV layout.
func TestCSVHeader(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, CSV, 0)
	require.NoError(t, err)
	w.Add(someSamples()[0])
	require.NoError(t, w.Close())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Equal(t, strings.Join(Columns, ","), lines[0])
	fields := strings.Split(lines[1], ",")
	require.Len(t, fields, len(Columns))
	fields[slices.Index(Columns, "resident_bytes")] = "RSS" // the process's, varies
	require.Equal(t, "0.0015,2.5,0,0,100,90,10,2,1,7,3,40,12,1048576,RSS,4,false,0.00025,0.001,0.000125,0.000125,0,0,0.003,2", strings.Join(fields, ","))
}

// blocked is an io.Writer that blocks until released.
type blocked struct {
	release chan struct{}
	buf     bytes.Buffer
}

func (b *blocked) Write(p []byte) (int, error) {
	<-b.release
	return b.buf.Write(p)
}

// TestAddNeverBlocks fills a writer whose file blocks: Add returns at once and counts
// what does not fit.
func TestAddNeverBlocks(t *testing.T) {
	out := &blocked{release: make(chan struct{})}
	w, err := NewWriter(out, JSONL, 4)
	require.NoError(t, err)
	for range 10000 {
		w.Add(kernel.Sample{Processed: 1})
	}
	// The drain goroutine holds what fits its file buffer (64 KiB) before it blocks, and
	// the channel four rows: the rest is dropped, and every row is written or dropped.
	require.Greater(t, w.Dropped(), uint64(9000))
	close(out.release)
	require.NoError(t, w.Close())
	rows, err := Read(&out.buf)
	require.NoError(t, err)
	require.Equal(t, uint64(10000), uint64(len(rows))+w.Dropped())
}

// TestOlderFiles reads files written before the device columns: they read as 0.
func TestOlderFiles(t *testing.T) {
	rows, err := Read(strings.NewReader("{\"wall_seconds\":0.5,\"worker\":0,\"gvt\":null,\"processed\":3}\n"))
	require.NoError(t, err)
	require.Equal(t, []Row{{WallSeconds: 0.5, GVT: math.Inf(1), Processed: 3}}, rows)
	rows, err = Read(strings.NewReader("wall_seconds,worker,processed\n0.5,0,3\n"))
	require.NoError(t, err)
	require.Equal(t, []Row{{WallSeconds: 0.5, Processed: 3}}, rows)
	_, err = Read(strings.NewReader("{\"wall_seconds\":0.5,\"worker\":0,\"device_bound\":\"x\"}\n"))
	require.ErrorContains(t, err, "sample line 1, device_bound")
}

// TestErrors checks the messages of bad input.
func TestErrors(t *testing.T) {
	_, err := NewWriter(&bytes.Buffer{}, "xml", 0)
	require.EqualError(t, err, `unknown sample format "xml" (want csv or jsonl)`)
	_, err = Read(strings.NewReader(""))
	require.EqualError(t, err, "empty sample file")
	_, err = Read(strings.NewReader("a,b\n1,2\n"))
	require.ErrorContains(t, err, `sample file has no "wall_seconds" column`)
	_, err = Read(strings.NewReader("wall_seconds,worker,processed\n1,x,3\n"))
	require.ErrorContains(t, err, "sample line 2, column worker")
	_, err = Read(strings.NewReader("{\"worker\":1,\"wall_seconds\":0.5}\n{oops\n"))
	require.ErrorContains(t, err, "sample line 2")
	_, err = Read(strings.NewReader("{}\n"))
	require.ErrorContains(t, err, "sample line 1 has no wall_seconds or worker")
}

// TestSeriesRoundTrip writes a model's series and reads it back, names with commas
// included.
func TestSeriesRoundTrip(t *testing.T) {
	in := []kernel.SeriesPoint{{Time: 0, LP: 3, Series: "infected", Value: 2},
		{Time: 10.5, LP: 0, Series: "queue, north", Value: -1.25}, {Time: 1e9, LP: 7, Series: "x", Value: 0}}
	var buf bytes.Buffer
	require.NoError(t, WriteSeries(&buf, in))
	first, _, _ := strings.Cut(buf.String(), "\n")
	require.True(t, IsSeries(first))
	out, err := ReadSeries(&buf)
	require.NoError(t, err)
	require.Equal(t, in, out)

	_, err = ReadSeries(strings.NewReader("wall_seconds,gvt\n1,2\n"))
	require.ErrorContains(t, err, "is it a --series-file?")
	_, err = ReadSeries(strings.NewReader(""))
	require.ErrorContains(t, err, "empty series file")
	_, err = ReadSeries(strings.NewReader("time,lp,series,value\n1,x,s,2\n"))
	require.ErrorContains(t, err, "series line 2")
}

// TestMeter: a Meter reads anew only when MeterPeriod has passed, or time went back.
func TestMeter(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip("no /proc/self/statm on this machine")
	}
	var m Meter
	first := m.Resident(time.Second)
	require.NotZero(t, first)
	m.bytes = 1 // a reading no read gives: seen again only if not read anew
	for _, tc := range []struct {
		name string
		at   time.Duration
		anew bool
	}{
		{"same set", time.Second, false},
		{"within the period", time.Second + MeterPeriod - 1, false},
		{"the period passed", time.Second + MeterPeriod, true},
		{"time went back", time.Millisecond, true},
	} {
		got := m.Resident(tc.at)
		require.Equal(t, tc.anew, got != 1, tc.name)
		m.bytes = 1
	}
}

// TestCutShort: a file whose last row was cut short (its run killed mid-write) gives the
// rows before it with ErrCutShort, in both formats and for series; a bad row before the
// end is still an error.
func TestCutShort(t *testing.T) {
	for _, format := range Formats() {
		buf, in := written(t, format)
		cut := buf.String()
		cut = cut[:len(cut)-12] // into the last row
		rows, err := Read(strings.NewReader(cut))
		require.ErrorIs(t, err, ErrCutShort, format)
		require.Len(t, rows, len(in)-1, format)
	}
	rows, err := Read(strings.NewReader("{\"worker\":1,\"wall_seconds\":0.5}\n{\"worker\":1,\"wall_sec"))
	require.ErrorIs(t, err, ErrCutShort)
	require.Len(t, rows, 1)
	_, err = Read(strings.NewReader("{\"worker\":1,\"wall_seconds\":0.5}\n{oops\n{\"worker\":1,\"wall_seconds\":0.6}\n"))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrCutShort, "a bad line before the end")
	pts, err := ReadSeries(strings.NewReader("time,lp,series,value\n1,2,s,3\n4,5,s"))
	require.ErrorIs(t, err, ErrCutShort)
	require.Len(t, pts, 1)
}
