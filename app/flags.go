package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// The command's flags are GNU-style (spf13/pflag): --flag value and --flag=value for
// every kind. parseArgs adds what pflag leaves out: a boolean takes the word that
// follows it (--progress on, --time-warp-remote-safe false), a single dash before a long
// name still works (-lps 8, as Go's flag package took it), and an unknown flag's error
// names the flags it may have meant.

// parseArgs parses args into fs. It returns pflag.ErrHelp when args ask for help.
func parseArgs(fs *pflag.FlagSet, args []string) error {
	norm, err := normalizeArgs(fs, args)
	if err != nil {
		return err
	}
	return outOfRange(fs.Parse(norm))
}

// outOfRange rewrites pflag's "must be an integer" for an integer too large (or small)
// for its flag's type, which the user may read as a complaint about the digits.
func outOfRange(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	bits := map[string]int{"int": 0, "int64": 64, "int32": 32, "int16": 16, "int8": 8}
	b, ok := bits[ive.GetFlag().Value.Type()]
	if !ok {
		return err
	}
	var ne *strconv.NumError
	if _, perr := strconv.ParseInt(ive.GetValue(), 0, b); !errors.As(perr, &ne) || ne.Err != strconv.ErrRange {
		return err
	}
	if b == 0 {
		b = strconv.IntSize
	}
	return fmt.Errorf("invalid argument %q for \"--%s\" flag: out of range (at most %d in magnitude)",
		ive.GetValue(), ive.GetFlag().Name, int64(1)<<(b-1)-1)
}

// normalizeArgs rewrites args into the forms pflag takes: every flag as --name or
// --name=value, a boolean's following word joined to it.
func normalizeArgs(fs *pflag.FlagSet, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...), nil
		case a == "-h" || a == "-help" || a == "--help":
			return nil, pflag.ErrHelp
		case len(a) < 2 || a[0] != '-' || strings.HasPrefix(a, "---"):
			out = append(out, a) // an argument, or bad syntax that pflag reports
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		value, hasValue := "", false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, value, hasValue = name[:k], name[k+1:], true
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, unknownFlag(fs, name)
		}
		if !hasValue && f.NoOptDefVal != "" && i+1 < len(args) && optionalWord(f, args[i+1]) {
			i++
			value, hasValue = args[i], true
		}
		switch {
		case hasValue:
			out = append(out, "--"+name+"="+flagWord(f, value))
		case f.NoOptDefVal == "" && i+1 < len(args):
			// The next argument is the value, whatever it looks like (--remote -0.5).
			i++
			out = append(out, "--"+name+"="+args[i])
		default:
			out = append(out, "--"+name) // a bare boolean, or a value missing: pflag says so
		}
	}
	return out, nil
}

// boolWords are the words a boolean flag takes, and what they mean.
var boolWords = map[string]string{"true": "true", "false": "false", "on": "true", "off": "false",
	"yes": "true", "no": "false", "1": "true", "0": "false", "t": "true", "f": "false"}

// optionalWord reports whether w, following flag f that may stand alone, is f's value:
// a boolean word for a boolean, auto, on or off for --progress.
func optionalWord(f *pflag.Flag, w string) bool {
	w = strings.ToLower(w)
	if f.Value.Type() == "bool" {
		_, ok := boolWords[w]
		return ok
	}
	return w == "auto" || w == "on" || w == "off"
}

// flagWord returns value as f's Set takes it: a boolean's on, off, yes or no as true or
// false.
func flagWord(f *pflag.Flag, value string) string {
	if f.Value.Type() == "bool" {
		if b, ok := boolWords[strings.ToLower(value)]; ok {
			return b
		}
	}
	return value
}

// unknownFlag is the error of a flag fs lacks, with the names it may have meant.
func unknownFlag(fs *pflag.FlagSet, name string) error {
	var near []string
	fs.VisitAll(func(f *pflag.Flag) {
		d := editDistance(name, f.Name)
		if d <= max(1, len(name)/4) || (len(name) >= 3 && strings.Contains(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if len(near) > 4 {
		near = near[:4]
	}
	return fmt.Errorf("unknown flag --%s (did you mean %s?)", name, strings.Join(near, " or "))
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Flag groups, in the order help lists them. A flag's group is its "group" annotation;
// the model's own flags have none.
const (
	groupModel    = "model"
	groupKernel   = "kernel"
	groupTimeWarp = "time-warp"
	groupGPU      = "gpu"
	groupOutput   = "output"
)

var flagGroups = []struct{ key, title string }{
	{groupModel, "Model flags"}, {groupKernel, "Kernel flags"},
	{groupTimeWarp, "Time warp flags"}, {groupGPU, "GPU flags (--gpu offload under time warp; --simulation-type gpu)"},
	{groupOutput, "Output flags"},
}

// outputFlags are the kernel's flags about what a run writes and shows.
var outputFlags = map[string]bool{"config": true, "dump-config": true, "stats-file": true, "progress": true,
	"sample-file": true, "sample-mode": true, "sample-period": true, "sample-format": true,
	"series-file": true, "report": true, "trace": true, "trace-every": true}

// annotateGroups puts every flag fs has so far in the kernel, time warp, GPU or output group.
func annotateGroups(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		g := groupKernel
		switch {
		case outputFlags[f.Name]:
			g = groupOutput
		case strings.HasPrefix(f.Name, "time-warp-"):
			g = groupTimeWarp
		case strings.HasPrefix(f.Name, "gpu"):
			g = groupGPU
		}
		_ = fs.SetAnnotation(f.Name, "group", []string{g})
	})
}

// flagGroup returns f's group.
func flagGroup(f *pflag.Flag) string {
	if g := f.Annotations["group"]; len(g) > 0 {
		return g[0]
	}
	return groupModel
}

// writeFlagHelp lists fs's flags by group, each group in the order the flags were made.
func writeFlagHelp(b *strings.Builder, fs *pflag.FlagSet) {
	fs.SortFlags = false
	for _, g := range flagGroups {
		first := true
		fs.VisitAll(func(f *pflag.Flag) {
			if flagGroup(f) != g.key {
				return
			}
			if first {
				fmt.Fprintf(b, "\n%s:\n", g.title)
				first = false
			}
			arg := ""
			if f.NoOptDefVal == "" {
				arg = " " + f.Value.Type()
			}
			fmt.Fprintf(b, "  --%s%s\n      %s%s\n", f.Name, arg, f.Usage, defaultNote(f))
		})
	}
}

// defaultNote is what a flag's help says of its default: " (default X)", or nothing where
// the usage says it already, the default is empty, or it is a boolean's false (the
// flag's absence).
func defaultNote(f *pflag.Flag) string {
	if strings.Contains(f.Usage, "(default") || f.DefValue == "" || f.Value.Type() == "bool" && f.DefValue == "false" {
		return ""
	}
	return " (default " + f.DefValue + ")"
}

// dumpConfig returns the flags that were set, on the command line or by --config, less
// those in omit, as a JSON object that --config accepts: a run with it is the same run,
// since a flag left out keeps the default it had (the CPUs of the machine it runs on,
// auto state saving).
func dumpConfig(fs *pflag.FlagSet, omit map[string]bool) ([]byte, error) {
	kv := map[string]any{}
	fs.Visit(func(f *pflag.Flag) {
		if notInConfig[f.Name] || omit[f.Name] {
			return
		}
		s := f.Value.String()
		switch f.Value.Type() {
		case "float64":
			if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(v, 0) {
				kv[f.Name] = v
				return
			}
		case "int", "uint64":
			kv[f.Name] = json.Number(s)
			return
		case "bool":
			if v, err := strconv.ParseBool(s); err == nil {
				kv[f.Name] = v
				return
			}
		}
		kv[f.Name] = s // a string, or +Inf (JSON has no infinity; "+Inf" parses back)
	})
	out, err := json.MarshalIndent(kv, "", "  ")
	return append(out, '\n'), err
}

// flagNumber returns the value of the numeric flag name of fs as a float64 (0 when there
// is none), so that products of sizes cannot wrap.
func flagNumber(fs *pflag.FlagSet, name string) float64 {
	f := fs.Lookup(name)
	if f == nil {
		return 0
	}
	switch f.Value.Type() {
	case "int", "uint64", "float64":
		v, _ := strconv.ParseFloat(f.Value.String(), 64)
		return v
	}
	return 0
}

// decimalIntegers has every integer flag of fs read its value in decimal: pflag reads
// integers as Go does, so --lps 010 was 8 (octal), 0x10 16 and 1_000 1000, which nobody
// giving a simulation's sizes means (a float flag read 010 as 10).
func decimalIntegers(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
			f.Value = decimal{f.Value}
		}
	})
}

// decimal is an integer flag's value read in decimal only (see decimalIntegers); leading
// zeros are allowed (010 is ten).
type decimal struct{ pflag.Value }

// Set sets the value from s, a decimal integer with an optional sign.
func (d decimal) Set(s string) error {
	sign, digits := "", s
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, digits = s[:1], s[1:]
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return fmt.Errorf("want a whole number in decimal digits")
	}
	if digits = strings.TrimLeft(digits, "0"); digits == "" {
		digits = "0"
	}
	return d.Value.Set(sign + digits)
}
