// Package promtext reads samples of the Prometheus text exposition format
// (a broker's /metrics page), as `moldau console` and `moldau bench` need
// them: a line at a time, with no types or help, no escapes undone.
package promtext

import "strings"

// SplitSample splits a sample line, `name{labels} value [timestamp]`, into
// its metric name, the text between the braces (empty without them) and
// the value as written; false for a comment, a blank line or a line
// without a value.
func SplitSample(line string) (name, labels, value string, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", "", false
	}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", "", "", false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		j := strings.LastIndexByte(rest, '}')
		if j < 0 {
			return "", "", "", false
		}
		labels, rest = rest[1:j], rest[j+1:]
	}
	value, _, _ = strings.Cut(strings.TrimSpace(rest), " ") // a timestamp may follow
	return name, labels, value, value != ""
}

// LabelValue finds label key in labels (as SplitSample returns them:
// `k="v",k2="v2"`) and returns its value as quoted, escapes kept.
func LabelValue(labels, key string) (string, bool) {
	for labels != "" {
		eq := strings.IndexByte(labels, '=')
		if eq < 0 || eq+1 >= len(labels) || labels[eq+1] != '"' {
			return "", false
		}
		k, rest := strings.TrimSpace(labels[:eq]), labels[eq+2:]
		end := 0
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(rest) {
			return "", false
		}
		if k == key {
			return rest[:end], true
		}
		labels = strings.TrimLeft(rest[end+1:], ", ")
	}
	return "", false
}
