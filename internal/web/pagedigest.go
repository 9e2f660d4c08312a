package web

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"math"
	"reflect"
	"slices"
	"time"
)

// A page's bytes are a function of its template's name, its title and
// its data (the templates and their functions read nothing else: no
// clock, no global state), besides the address and search text the
// cached page keeps. A page rendered again on age (every 30 seconds while
// read, for its download figures) usually repeats itself; its data is
// read again from the index, but when the data's digest equals the kept
// page's, the page is kept as it is and the template, most of a render's
// CPU, is not run (partRenderer).

// maxDigestDepth bounds the nesting of the values dataDigest follows: a
// deeper value (or a cycle) gives no digest.
const maxDigestDepth = 32

// timeType is time.Time, encoded by its instant and location rather
// than field by field.
var timeType = reflect.TypeFor[time.Time]()

// dataDigest returns the SHA-256 of an encoding of name, title and data
// that two values share only when they are equal field by field (for
// pointers and interfaces, what they point to; for maps, their entries
// in any order; for times, the same instant in the same location). ok is
// false for data that holds what it cannot compare that way (a func, a
// channel, an unsafe pointer, nesting deeper than maxDigestDepth): such
// a page is always rendered.
func dataDigest(name, title string, data any) (sum [sha256.Size]byte, ok bool) {
	e := digestEncoder{h: sha256.New(), b: make([]byte, 0, digestBuffer)}
	e.string(name)
	e.string(title)
	v := reflect.ValueOf(data)
	if v.IsValid() {
		e.string(v.Type().String())
	}
	if !e.value(v, 0) {
		return sum, false
	}
	e.h.Write(e.b)
	e.h.Sum(sum[:0])
	return sum, true
}

// digestBuffer is how many bytes of encoding a digestEncoder gathers
// before it hashes them.
const digestBuffer = 4 << 10

// digestEncoder writes an unambiguous encoding of values to h, through
// b (all of it to b when h is nil): every string and every sequence is
// preceded by its length, every optional value by whether it is there.
type digestEncoder struct {
	h hash.Hash
	b []byte
}

func (e *digestEncoder) uint(n uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, n) }

func (e *digestEncoder) string(s string) {
	e.uint(uint64(len(s)))
	if e.h != nil && len(e.b)+len(s) > digestBuffer {
		e.h.Write(e.b)
		e.b = e.b[:0]
		if len(s) > digestBuffer {
			_, _ = io.WriteString(e.h, s)
			return
		}
	}
	e.b = append(e.b, s...)
}

func (e *digestEncoder) bool(b bool) {
	if b {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// value appends v's encoding and reports whether v could be encoded.
func (e *digestEncoder) value(v reflect.Value, depth int) bool {
	if depth > maxDigestDepth {
		return false
	}
	if !v.IsValid() {
		e.bool(false)
		return true
	}
	switch v.Kind() {
	case reflect.Bool:
		e.bool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.uint(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.uint(v.Uint())
	case reflect.Float32, reflect.Float64:
		e.uint(math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		e.uint(math.Float64bits(real(c)))
		e.uint(math.Float64bits(imag(c)))
	case reflect.String:
		e.string(v.String())
	case reflect.Slice:
		e.bool(!v.IsNil())
		if v.Type().Elem().Kind() == reflect.Uint8 {
			e.string(string(v.Bytes()))
			return true
		}
		fallthrough
	case reflect.Array:
		e.uint(uint64(v.Len()))
		for i := range v.Len() {
			if !e.value(v.Index(i), depth+1) {
				return false
			}
		}
	case reflect.Struct:
		if v.Type() == timeType {
			// Its location is a pointer: equal instants in equal
			// locations are equal times, whatever their monotonic
			// readings (which no page shows).
			if !v.CanInterface() {
				return false // an unexported field: not read here
			}
			t := v.Interface().(time.Time)
			e.uint(uint64(t.Unix()))
			e.uint(uint64(t.Nanosecond()))
			e.string(t.Location().String())
			zone, offset := t.Zone() // two locations may share a name
			e.string(zone)
			e.uint(uint64(int64(offset)))
			return true
		}
		for i := range v.NumField() {
			if !e.value(v.Field(i), depth+1) {
				return false
			}
		}
	case reflect.Pointer, reflect.Interface:
		e.bool(!v.IsNil())
		if v.IsNil() {
			return true
		}
		if v.Kind() == reflect.Interface {
			e.string(v.Elem().Type().String())
		}
		return e.value(v.Elem(), depth+1)
	case reflect.Map:
		e.bool(!v.IsNil())
		entries := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			sub := digestEncoder{}
			if !sub.value(it.Key(), depth+1) || !sub.value(it.Value(), depth+1) {
				return false
			}
			entries = append(entries, string(sub.b))
		}
		slices.Sort(entries)
		e.uint(uint64(len(entries)))
		for _, s := range entries {
			e.string(s)
		}
	default: // func, chan, unsafe pointer
		return false
	}
	return true
}
