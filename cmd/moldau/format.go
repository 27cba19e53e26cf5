package main

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consume --format is a printf-like template, as kcat's -f (and close to
// rpk's -f): short enough for a one-liner, and it writes keys and values
// as raw bytes with nothing added.
const formatHelp = `  %t  topic                    %k  key (nothing for a null key)
  %p  partition                %v  value (nothing for a null value)
  %o  offset                   %h  headers, as k1=v1,k2=v2
  %T  timestamp (Unix ms)      %K  key length (-1 for null)
  %e  leader epoch             %V  value length (-1 for null)
  %%  a percent sign           \n \t \r \\  newline, tab, carriage return, backslash`

// recordFormat is a parsed --format: literal text and verbs.
type recordFormat struct{ parts []formatPart }

type formatPart struct {
	verb byte // 0 for literal text
	lit  []byte
}

// parseFormat compiles a --format template. An unknown verb or escape is an
// error, so a typo is caught before any record is consumed.
func parseFormat(s string) (*recordFormat, error) {
	f := &recordFormat{}
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			f.parts = append(f.parts, formatPart{lit: lit})
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%', '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("format %q ends with a lone %q", s, c)
			}
			i++
			n := s[i]
			if c == '\\' {
				switch n {
				case 'n':
					lit = append(lit, '\n')
				case 't':
					lit = append(lit, '\t')
				case 'r':
					lit = append(lit, '\r')
				case '\\':
					lit = append(lit, '\\')
				default:
					return nil, fmt.Errorf(`format %q: unknown escape \%c (use \n, \t, \r or \\)`, s, n)
				}
				continue
			}
			switch n {
			case '%':
				lit = append(lit, '%')
			case 't', 'p', 'o', 'T', 'e', 'k', 'v', 'h', 'K', 'V':
				flush()
				f.parts = append(f.parts, formatPart{verb: n})
			default:
				return nil, fmt.Errorf("format %q: unknown verb %%%c; the verbs are:\n%s", s, n, formatHelp)
			}
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return f, nil
}

// appendRecord appends r formatted to dst.
func (f *recordFormat) appendRecord(dst []byte, r *kgo.Record) []byte {
	for _, p := range f.parts {
		switch p.verb {
		case 0:
			dst = append(dst, p.lit...)
		case 't':
			dst = append(dst, r.Topic...)
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 'T':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'e':
			dst = strconv.AppendInt(dst, int64(r.LeaderEpoch), 10)
		case 'k':
			dst = append(dst, r.Key...)
		case 'v':
			dst = append(dst, r.Value...)
		case 'K':
			dst = appendLen(dst, r.Key)
		case 'V':
			dst = appendLen(dst, r.Value)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		}
	}
	return dst
}

func appendLen(dst, b []byte) []byte {
	if b == nil {
		return append(dst, '-', '1')
	}
	return strconv.AppendInt(dst, int64(len(b)), 10)
}

// jsonRecord is consume --json's line per record; see output.go for how
// bytes are encoded.
type jsonRecord struct {
	Topic         string       `json:"topic"`
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	LeaderEpoch   int32        `json:"leader_epoch"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
}

type jsonHeader struct {
	Key           string  `json:"key"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

func toJSONRecord(r *kgo.Record) jsonRecord {
	k, v := encodeBytes(r.Key), encodeBytes(r.Value)
	out := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		LeaderEpoch: r.LeaderEpoch, Key: k.value, KeyEncoding: k.encoding, Value: v.value, ValueEncoding: v.encoding,
		Headers: make([]jsonHeader, 0, len(r.Headers))}
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		if hk := encodeBytes([]byte(h.Key)); hk.value != nil {
			jh.Key, jh.KeyEncoding = *hk.value, hk.encoding
		}
		hv := encodeBytes(h.Value)
		jh.Value, jh.ValueEncoding = hv.value, hv.encoding
		out.Headers = append(out.Headers, jh)
	}
	return out
}
