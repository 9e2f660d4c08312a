package server

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// AccessLog writes the access log, one "http request" line per request,
// byte for byte as slog's text or JSON handler (created without
// ReplaceAttr or AddSource) writes that record, but without going through
// slog: formatting the line with slog costs more than the rest of a cached
// protocol answer. accesslog_test.go checks the equality.
type AccessLog struct {
	// W receives whole lines, one Write each (the other log lines go to
	// the same writer through slog, which also writes whole lines).
	W io.Writer
	// JSON selects slog's JSON format instead of its text format.
	JSON bool
	// Level is the lowest level written (an access line is Info, Warn
	// for 5xx answers, Debug for health and metrics requests).
	Level slog.Level
}

var accessBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// enabled reports whether a line of level is written.
func (a *AccessLog) enabled(level slog.Level) bool { return level >= a.Level }

// write writes one access line.
func (a *AccessLog) write(t time.Time, level slog.Level, method, route, path string, status int, bytes int64, d time.Duration) {
	a.writeLine(t, level, a.appendMethodRoute(nil, method, route), path, status, bytes, d)
}

// appendMethodRoute appends the method and route members of an access
// line in a's format, as writeLine takes them: the same for every
// request of a route, so the middleware formats them once per route
// (with its metrics series) rather than per request.
func (a *AccessLog) appendMethodRoute(b []byte, method, route string) []byte {
	if a.JSON {
		return appendMethodRouteJSON(b, method, route)
	}
	return appendMethodRouteText(b, method, route)
}

func appendMethodRouteText(b []byte, method, route string) []byte {
	b = append(b, " method="...)
	b = appendTextString(b, method)
	b = append(b, " route="...)
	return appendTextString(b, route)
}

func appendMethodRouteJSON(b []byte, method, route string) []byte {
	b = append(b, `,"method":`...)
	b = appendJSONString(b, method)
	b = append(b, `,"route":`...)
	return appendJSONString(b, route)
}

// writeLine writes one access line whose method and route members are
// methodRoute (appendMethodRoute's).
func (a *AccessLog) writeLine(t time.Time, level slog.Level, methodRoute []byte, path string, status int, bytes int64, d time.Duration) {
	bp := accessBufs.Get().(*[]byte)
	b := (*bp)[:0]
	if a.JSON {
		b = append(b, `{"time":"`...)
		b = appendRFC3339Nano(b, t)
		b = append(b, `","level":"`...)
		b = append(b, level.String()...)
		b = append(b, `","msg":"http request"`...)
		b = append(b, methodRoute...)
		b = append(b, `,"path":`...)
		b = appendJSONString(b, path)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, bytes, 10)
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, int64(d), 10)
		b = append(b, "}\n"...)
	} else {
		b = append(b, "time="...)
		b = appendRFC3339Millis(b, t)
		b = append(b, " level="...)
		b = append(b, level.String()...)
		b = append(b, ` msg="http request"`...)
		b = append(b, methodRoute...)
		b = append(b, " path="...)
		b = appendTextString(b, path)
		b = append(b, " status="...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, " bytes="...)
		b = strconv.AppendInt(b, bytes, 10)
		b = append(b, " duration="...)
		b = append(b, d.String()...)
		b = append(b, '\n')
	}
	_, _ = a.W.Write(b)
	*bp = b
	accessBufs.Put(bp)
}

// appendRFC3339Millis appends t as slog's text handler does: RFC 3339
// with exactly three digits of fraction (slog truncates to the
// millisecond).
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	s := stampOf(t)
	if s == nil {
		return appendRFC3339MillisSlow(b, t)
	}
	ms := t.Nanosecond() / 1e6
	b = append(b, s.prefix...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

// appendRFC3339MillisSlow is appendRFC3339Millis through time's
// formatting, for the years stampOf does not cache.
func appendRFC3339MillisSlow(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	// RFC3339Nano trims trailing zeros: a tenth of a millisecond more
	// keeps four digits, of which the fourth is dropped.
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// appendRFC3339Nano appends t as t.AppendFormat(b, time.RFC3339Nano)
// does (slog's JSON handler): the fraction without its trailing zeros,
// none at all on a whole second.
func appendRFC3339Nano(b []byte, t time.Time) []byte {
	s := stampOf(t)
	if s == nil {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	b = append(b, s.prefix...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, s.zone...)
}

// secondStamp is the formatted second of an access line's time: its date
// and time of day ("2006-01-02T15:04:05") and zone ("Z" or "+01:00"),
// which every line of the same second and location shares. Formatting
// them with time's layouts costs more than the rest of the line.
type secondStamp struct {
	sec    int64 // Unix seconds
	loc    *time.Location
	prefix []byte
	zone   []byte
}

// lastStamp is the second of the line written last.
var lastStamp atomic.Pointer[secondStamp]

// stampOf returns the formatted second of t, or nil for a year outside
// 0000 to 9999 (whose text is not 19 bytes long). A location and a Unix
// second determine the offset, hence the text.
func stampOf(t time.Time) *secondStamp {
	sec, loc := t.Unix(), t.Location()
	if s := lastStamp.Load(); s != nil && s.sec == sec && s.loc == loc {
		return s
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return nil
	}
	s := &secondStamp{sec: sec, loc: loc,
		prefix: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
	lastStamp.Store(s)
	return s
}

// appendTextString appends s as slog's text handler does: as it is, or
// quoted (strconv.Quote) when empty or when it holds a space, '=', '"',
// a control or unprintable character or invalid UTF-8.
func appendTextString(b []byte, s string) []byte {
	if textNeedsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func textNeedsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if textQuoteASCII[c] {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// textQuoteASCII tells the ASCII bytes that make slog's text handler
// quote a string: a space, '=', '"' and the control characters below
// 0x20 (not DEL, not '\\').
var textQuoteASCII = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = c == ' ' || c == '=' || c == '"' || c < 0x20
	}
	return t
}()

// appendJSONString appends s as a JSON string as slog's JSON handler
// does: '"' and '\' escaped, control characters as \n, \r, \t or \u00XX,
// U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd; nothing else (no
// HTML escaping).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
