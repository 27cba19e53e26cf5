package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Output: tables are aligned columns with upper-case headers (rpk's look);
// a missing value is "-". --json prints one JSON value on one line: an
// object or an array for one-shot commands, one object per line for
// streams (consume, log dump).

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(headers) > 0 {
		t.row(anySlice(headers)...)
	}
	return t
}

func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func (t *table) row(cols ...any) {
	for i, c := range cols {
		if i > 0 {
			t.tw.Write([]byte{'\t'})
		}
		fmt.Fprint(t.tw, c)
	}
	t.tw.Write([]byte{'\n'})
}

func (t *table) flush() error { return t.tw.Flush() }

// section prints a section title, as rpk does, before a table.
func section(w io.Writer, title string) {
	fmt.Fprintf(w, "%s\n%s\n", title, strings.Repeat("=", len(title)))
}

// writeJSON prints v as one line of JSON, without HTML escaping.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// dash shows a negative (unknown) number as "-".
func dash(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// orDash shows an empty string as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// int32List prints [1,2,3].
func int32List(s []int32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, v)
	}
	b.WriteByte(']')
	return b.String()
}

// Bytes in JSON. Kafka keys, values and header values are bytes, and JSON
// strings must be Unicode. A field holding bytes is a JSON string with the
// bytes themselves when they are valid UTF-8 (encoding/json escapes
// control characters, so every valid UTF-8 string round-trips exactly);
// otherwise it is the standard base64 (RFC 4648, with padding) of the bytes
// and a sibling field "<name>_encoding" says "base64". A null key or value
// is JSON null. Decoding: if "<name>_encoding" is "base64", base64-decode
// the string; else take its UTF-8 bytes.

// jsonBytes is the encoded form of one bytes field.
type jsonBytes struct {
	value    *string
	encoding string // "" or "base64"
}

func encodeBytes(b []byte) jsonBytes {
	if b == nil {
		return jsonBytes{}
	}
	if utf8.Valid(b) {
		s := string(b)
		return jsonBytes{value: &s}
	}
	s := base64.StdEncoding.EncodeToString(b)
	return jsonBytes{value: &s, encoding: "base64"}
}

// decodeBytes is the inverse of encodeBytes.
func decodeBytes(value *string, encoding string) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	switch encoding {
	case "":
		return []byte(*value), nil
	case "base64":
		return base64.StdEncoding.DecodeString(*value)
	}
	return nil, fmt.Errorf("unknown encoding %q", encoding)
}

// humanBytes prints a byte count with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
