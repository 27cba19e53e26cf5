package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Property is one key=value of a properties file, with its line number.
type Property struct {
	Key, Value string
	Line       int
}

// ParseProperties parses the text of a Java .properties file as
// java.util.Properties.load does: '#' and '!' start comment lines; a key
// ends at the first unescaped '=', ':' or white space; a line ending in an
// odd number of backslashes continues on the next line, whose leading
// white space is dropped; escapes \t \n \r \f \uXXXX and \<char> (the char
// itself). Later keys win over earlier ones (the caller decides).
func ParseProperties(text string) ([]Property, error) {
	var props []Property
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines.
		for endsWithOddBackslashes(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if endsWithOddBackslashes(line) { // at end of file: drop it
			line = line[:len(line)-1]
		}
		// Split key and value.
		k := 0
		for k < len(line) {
			c := line[k]
			if c == '\\' {
				k += 2
				continue
			}
			if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
				break
			}
			k++
		}
		if k > len(line) {
			k = len(line)
		}
		rawKey := line[:k]
		rest := strings.TrimLeft(line[k:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		key, err := unescape(rawKey)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		value, err := unescape(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		props = append(props, Property{Key: key, Value: value, Line: start})
	}
	return props, nil
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

func endsWithOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uxxxx encoding")
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx encoding")
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
