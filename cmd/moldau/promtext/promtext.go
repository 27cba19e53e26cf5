// Package promtext reads samples of the Prometheus text exposition format
// (a broker's /metrics page), as `moldau console` and `moldau bench` need
// them: a line at a time, with no types or help, no escapes undone.
package promtext

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Scrape GETs url with c and calls each for every sample of the first
// maxBytes of the page (see Parse).
func Scrape(ctx context.Context, c *http.Client, url string, maxBytes int64, each func(name, labels, value string) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, maxBytes), each)
}

// Parse calls each for every sample line of r (SplitSample); an error
// from each stops it and is returned.
func Parse(r io.Reader, each func(name, labels, value string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if name, labels, value, ok := SplitSample(sc.Text()); ok {
			if err := each(name, labels, value); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

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
