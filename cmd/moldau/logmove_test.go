package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadLogMovePlan(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "plan.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	moves, err := readLogMovePlan(write(`{"version":1,"partitions":[
		{"topic":"a","partition":0,"replicas":[1,2,3],"log_dirs":["/d2","any","/d1"]},
		{"topic":"b","partition":1,"replicas":[2]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []logMove{{"a", 0, 1, "/d2"}, {"a", 0, 3, "/d1"}}
	if !reflect.DeepEqual(moves, want) {
		t.Fatalf("moves %+v, want %+v", moves, want)
	}
	for body, msg := range map[string]string{
		`{"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["/d"]}]}`:    "1 log_dirs for 2 replicas",
		`{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["rel/dir"]}]}`: "not an absolute path",
		`{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["any"]}]}`:     "no replica with a log dir",
		`{"partitions":`: "unexpected end",
	} {
		if _, err := readLogMovePlan(write(body)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", body, err, msg)
		}
	}
}
