// Package sample writes and reads engine samples (kernel.Sample) of a time-warp run: a time
// series of its progress, one row per worker and rank, as CSV or JSON lines; and a model's
// own time series (kernel.SeriesPoint) as CSV (WriteSeries, ReadSeries).
//
// A Writer never blocks its caller (the kernel's manager goroutine): rows go into a bounded
// buffer that a goroutine of the Writer drains to the file, and a row that finds the
// buffer full is counted (Dropped) instead of waited for.
package sample

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpedgo/warped/internal/meminfo"
	"github.com/warpedgo/warped/kernel"
)

// Formats accepted by NewWriter.
const (
	CSV   = "csv"
	JSONL = "jsonl"
)

// Formats lists the accepted formats.
func Formats() []string { return []string{CSV, JSONL} }

// DefaultBuffer is the number of rows a Writer holds before it drops rows.
const DefaultBuffer = 1 << 14

// Row is one sample as written: kernel.Sample with its times in seconds (worker -1 is a
// rank's manager). The JSON
// names are the CSV column names (Columns); a GVT that is infinite (nothing pending) is
// null in JSON and +Inf in CSV.
type Row struct {
	WallSeconds        float64 `json:"wall_seconds"`
	GVT                float64 `json:"gvt"`
	Rank               int     `json:"rank"`
	Worker             int     `json:"worker"`
	Processed          uint64  `json:"processed"`
	Committed          int64   `json:"committed"`
	RolledBack         uint64  `json:"rolled_back"`
	PrimaryRollbacks   uint64  `json:"primary_rollbacks"`
	SecondaryRollbacks uint64  `json:"secondary_rollbacks"`
	AntiMessages       uint64  `json:"anti_messages"`
	SafeEvents         uint64  `json:"safe_events"`
	PendingEvents      int     `json:"pending_events"`
	HistoryLength      int     `json:"history_length"`
	MemoryBytes        uint64  `json:"memory_bytes"`
	// ResidentBytes is the process's resident memory when the row's set was taken, read
	// at most every MeterPeriod (0: unknown, as in files written before it was sampled).
	ResidentBytes  uint64 `json:"resident_bytes"`
	OffloadBatches uint64 `json:"offload_batches"`
	Final          bool   `json:"final"`
	// IdleSeconds, ProcessingSeconds, GVTSeconds and CommSeconds are the time split
	// (kernel.Sample's Idle, Processing, GVTTime and Comm): seconds since the worker's
	// previous row, not cumulative, like the counts.
	IdleSeconds       float64 `json:"idle_seconds"`
	ProcessingSeconds float64 `json:"processing_seconds"`
	GVTSeconds        float64 `json:"gvt_seconds"`
	CommSeconds       float64 `json:"comm_seconds"`
	// DeviceIterations and DeviceBound are kernel.Sample's (simulation type gpu; 0 in
	// others and in files written before they were sampled). An infinite bound is null
	// in JSON, as GVT is.
	DeviceIterations uint64  `json:"device_iterations"`
	DeviceBound      float64 `json:"device_bound"`
	// CPUWaitSeconds and WorkerThreads are kernel.Sample's CPUWait and WorkerThreads: the
	// process's threads' wait for a processor since the run began, and the threads
	// running the workers (time warp; 0 in others and in files written before they were
	// sampled).
	CPUWaitSeconds float64 `json:"cpu_wait_seconds"`
	WorkerThreads  int     `json:"worker_threads"`
}

// Columns are the CSV header, in the order of Row's fields. Read only.
var Columns = []string{"wall_seconds", "gvt", "rank", "worker", "processed", "committed", "rolled_back",
	"primary_rollbacks", "secondary_rollbacks", "anti_messages", "safe_events", "pending_events",
	"history_length", "memory_bytes", "resident_bytes", "offload_batches", "final", "idle_seconds", "processing_seconds",
	"gvt_seconds", "comm_seconds", "device_iterations", "device_bound", "cpu_wait_seconds", "worker_threads"}

// FromKernel converts a kernel sample to a row, with the process's resident memory
// (meminfo.Resident, as a Meter reads it).
func FromKernel(s kernel.Sample, residentBytes uint64) Row {
	return Row{ResidentBytes: residentBytes, WallSeconds: s.Elapsed.Seconds(), GVT: s.GVT, Rank: s.Rank, Worker: s.Worker,
		Processed: s.Processed, Committed: s.Committed, RolledBack: s.RolledBack,
		PrimaryRollbacks: s.PrimaryRollbacks, SecondaryRollbacks: s.SecondaryRollbacks,
		AntiMessages: s.AntiMessages, SafeEvents: s.SafeEvents, PendingEvents: s.PendingEvents,
		HistoryLength: s.HistoryLength, MemoryBytes: s.MemoryBytes, OffloadBatches: s.OffloadBatches,
		Final: s.Final, IdleSeconds: s.Idle.Seconds(), ProcessingSeconds: s.Processing.Seconds(),
		GVTSeconds: s.GVTTime.Seconds(), CommSeconds: s.Comm.Seconds(),
		DeviceIterations: s.DeviceIterations, DeviceBound: s.DeviceBound,
		CPUWaitSeconds: s.CPUWait.Seconds(), WorkerThreads: s.WorkerThreads}
}

// appendRow appends r in format (CSV or JSONL) and a newline to b.
func appendRow(b []byte, r *Row, format string) []byte {
	g := func(b []byte, x float64) []byte {
		if format == JSONL && (math.IsInf(x, 0) || math.IsNaN(x)) {
			return append(b, "null"...)
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	u := strconv.AppendUint
	i := strconv.AppendInt
	sep := func(b []byte, name string) []byte {
		if format == CSV {
			if name != Columns[0] {
				b = append(b, ',')
			}
			return b
		}
		if name == Columns[0] {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		return append(b, '"', ':')
	}
	b = g(sep(b, "wall_seconds"), r.WallSeconds)
	b = g(sep(b, "gvt"), r.GVT)
	b = i(sep(b, "rank"), int64(r.Rank), 10)
	b = i(sep(b, "worker"), int64(r.Worker), 10)
	b = u(sep(b, "processed"), r.Processed, 10)
	b = i(sep(b, "committed"), r.Committed, 10)
	b = u(sep(b, "rolled_back"), r.RolledBack, 10)
	b = u(sep(b, "primary_rollbacks"), r.PrimaryRollbacks, 10)
	b = u(sep(b, "secondary_rollbacks"), r.SecondaryRollbacks, 10)
	b = u(sep(b, "anti_messages"), r.AntiMessages, 10)
	b = u(sep(b, "safe_events"), r.SafeEvents, 10)
	b = i(sep(b, "pending_events"), int64(r.PendingEvents), 10)
	b = i(sep(b, "history_length"), int64(r.HistoryLength), 10)
	b = u(sep(b, "memory_bytes"), r.MemoryBytes, 10)
	b = u(sep(b, "resident_bytes"), r.ResidentBytes, 10)
	b = u(sep(b, "offload_batches"), r.OffloadBatches, 10)
	b = strconv.AppendBool(sep(b, "final"), r.Final)
	b = g(sep(b, "idle_seconds"), r.IdleSeconds)
	b = g(sep(b, "processing_seconds"), r.ProcessingSeconds)
	b = g(sep(b, "gvt_seconds"), r.GVTSeconds)
	b = g(sep(b, "comm_seconds"), r.CommSeconds)
	b = u(sep(b, "device_iterations"), r.DeviceIterations, 10)
	b = g(sep(b, "device_bound"), r.DeviceBound)
	b = g(sep(b, "cpu_wait_seconds"), r.CPUWaitSeconds)
	b = i(sep(b, "worker_threads"), int64(r.WorkerThreads), 10)
	if format == JSONL {
		b = append(b, '}')
	}
	return append(b, '\n')
}

// Meter reads the process's resident memory for rows, at most once per MeterPeriod of
// the run's wall time: a read of /proc costs 10 to 30 microseconds, GVT rounds can come
// every 0.2 ms, and resident memory moves slowly. The rows of one set (one per worker)
// share their wall time and so their reading. Its zero value is ready; it is safe for
// concurrent use.
type Meter struct {
	mu    sync.Mutex
	at    time.Duration
	bytes uint64
	read  bool
}

// MeterPeriod is the least wall time between two reads of a Meter.
const MeterPeriod = 10 * time.Millisecond

// Resident returns the resident memory for the set of rows taken at elapsed: read anew
// when MeterPeriod has passed since the last read (or elapsed went back), else the last
// reading.
func (m *Meter) Resident(elapsed time.Duration) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.read || elapsed-m.at >= MeterPeriod || elapsed < m.at {
		m.at, m.bytes, m.read = elapsed, meminfo.Resident(), true
	}
	return m.bytes
}

// measured is a sample and the resident memory when it was taken.
type measured struct {
	s        kernel.Sample
	resident uint64
}

// Writer writes rows to an io.Writer from a bounded buffer, on a goroutine of its own.
type Writer struct {
	format  string
	meter   Meter
	rows    chan measured
	dropped atomic.Uint64
	done    chan struct{}
	once    sync.Once
	err     error // the first write error (read after done)
}

// NewWriter starts a writer of rows to out in format (CSV, with a header, or JSONL),
// holding at most buffer rows (DefaultBuffer if buffer <= 0) that are not written yet.
func NewWriter(out io.Writer, format string, buffer int) (*Writer, error) {
	if format != CSV && format != JSONL {
		return nil, fmt.Errorf("unknown sample format %q (want %s)", format, strings.Join(Formats(), " or "))
	}
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	w := &Writer{format: format, rows: make(chan measured, buffer), done: make(chan struct{})}
	go w.drain(out)
	return w, nil
}

// drain writes the rows until Close.
func (w *Writer) drain(out io.Writer) {
	defer close(w.done)
	bw := bufio.NewWriterSize(out, 64<<10)
	if w.format == CSV {
		_, w.err = bw.WriteString(strings.Join(Columns, ",") + "\n")
	}
	var b []byte
	for m := range w.rows {
		if w.err != nil {
			continue // keep draining, so that Add never blocks
		}
		r := FromKernel(m.s, m.resident)
		b = appendRow(b[:0], &r, w.format)
		_, w.err = bw.Write(b)
		if len(w.rows) == 0 && w.err == nil {
			w.err = bw.Flush()
		}
	}
	if w.err == nil {
		w.err = bw.Flush()
	}
}

// Add queues sample s for writing, or counts it as dropped when the buffer is full. It
// never blocks. It must not be called after Close.
func (w *Writer) Add(s kernel.Sample) {
	select {
	case w.rows <- measured{s, w.meter.Resident(s.Elapsed)}:
	default:
		w.dropped.Add(1)
	}
}

// Dropped returns the number of rows that found the buffer full.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close writes the rows still buffered and returns the first write error.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.rows) })
	<-w.done
	if w.err != nil {
		return fmt.Errorf("write samples: %w", w.err)
	}
	return nil
}

// ErrCutShort is wrapped by Read's and ReadSeries' error when the file's last row is cut
// short (a run killed while it wrote, or one still writing): the rows before it are
// returned with it.
var ErrCutShort = errors.New("the file ends in a row cut short (its run was killed, or is still writing); the rows before it are read")

// Read reads rows written by a Writer, in either format (JSON lines start with '{'). A
// last row cut short is left out, and the error then wraps ErrCutShort.
func Read(in io.Reader) ([]Row, error) {
	br := bufio.NewReader(in)
	first, err := br.Peek(1)
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty sample file")
	} else if err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	if first[0] == '{' {
		return readJSONL(br)
	}
	return readCSV(br)
}

// readJSONL reads JSON lines.
func readJSONL(in io.Reader) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r struct {
			Row
			GVT         *float64 `json:"gvt"`
			WallSeconds *float64 `json:"wall_seconds"`
			Worker      *int     `json:"worker"`
			// DeviceBound is null when infinite, and absent in files written before it was.
			DeviceBound json.RawMessage `json:"device_bound"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			if !json.Valid(line) && !sc.Scan() && sc.Err() == nil { // the last line, cut short
				return rows, fmt.Errorf("sample line %d: %w", n, ErrCutShort)
			}
			return nil, fmt.Errorf("sample line %d: %w", n, err)
		}
		if r.WallSeconds == nil || r.Worker == nil {
			return nil, fmt.Errorf("sample line %d has no wall_seconds or worker: is it a --sample-file?", n)
		}
		r.Row.WallSeconds, r.Row.Worker = *r.WallSeconds, *r.Worker
		r.Row.GVT = math.Inf(1)
		if r.GVT != nil {
			r.Row.GVT = *r.GVT
		}
		switch b := string(r.DeviceBound); b {
		case "":
		case "null":
			r.Row.DeviceBound = math.Inf(1)
		default:
			if err := json.Unmarshal(r.DeviceBound, &r.Row.DeviceBound); err != nil {
				return nil, fmt.Errorf("sample line %d, device_bound %s: %w", n, b, err)
			}
		}
		rows = append(rows, r.Row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	return rows, nil
}

// readCSV reads CSV with a header naming Columns (in any order; unknown columns are
// skipped).
func readCSV(in io.Reader) ([]Row, error) {
	cr := csv.NewReader(in)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read sample header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, c := range []string{"wall_seconds", "worker", "processed"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("sample file has no %q column: is it a --sample-file?", c)
		}
	}
	var rows []Row
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			if lastCutShort(cr, err) {
				return rows, fmt.Errorf("sample line %d: %w", line, ErrCutShort)
			}
			return nil, fmt.Errorf("read samples: %w", err)
		}
		var r Row
		var perr error
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		f := func(name string) float64 {
			s := get(name)
			if s == "" {
				return 0
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("sample line %d, column %s: %w", line, name, err)
			}
			return x
		}
		n := func(name string) int64 {
			s := get(name)
			if s == "" {
				return 0
			}
			x, err := strconv.ParseInt(s, 10, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("sample line %d, column %s: %w", line, name, err)
			}
			return x
		}
		r.WallSeconds, r.GVT = f("wall_seconds"), f("gvt")
		r.Rank, r.Worker = int(n("rank")), int(n("worker"))
		r.Processed, r.Committed, r.RolledBack = uint64(n("processed")), n("committed"), uint64(n("rolled_back"))
		r.PrimaryRollbacks, r.SecondaryRollbacks = uint64(n("primary_rollbacks")), uint64(n("secondary_rollbacks"))
		r.AntiMessages, r.SafeEvents = uint64(n("anti_messages")), uint64(n("safe_events"))
		r.PendingEvents, r.HistoryLength = int(n("pending_events")), int(n("history_length"))
		r.MemoryBytes, r.OffloadBatches = uint64(n("memory_bytes")), uint64(n("offload_batches"))
		r.ResidentBytes = uint64(n("resident_bytes"))
		r.Final = get("final") == "true"
		r.IdleSeconds, r.ProcessingSeconds = f("idle_seconds"), f("processing_seconds")
		r.GVTSeconds, r.CommSeconds = f("gvt_seconds"), f("comm_seconds")
		r.DeviceIterations, r.DeviceBound = uint64(n("device_iterations")), f("device_bound")
		r.CPUWaitSeconds, r.WorkerThreads = f("cpu_wait_seconds"), int(n("worker_threads"))
		if perr != nil {
			return nil, perr
		}
		rows = append(rows, r)
	}
}

// lastCutShort reports whether err, of cr's last Read, is a record with too few fields (or
// an unterminated quote) after which the file ends: the last row of a file cut short.
func lastCutShort(cr *csv.Reader, err error) bool {
	var pe *csv.ParseError
	if !errors.As(err, &pe) || !errors.Is(pe.Err, csv.ErrFieldCount) && !errors.Is(pe.Err, csv.ErrQuote) {
		return false
	}
	_, next := cr.Read()
	return errors.Is(next, io.EOF)
}
