package promtext

import "testing"

func TestSplitSample(t *testing.T) {
	for _, tc := range []struct {
		line, name, labels, value string
		ok                        bool
	}{
		{"# HELP x y", "", "", "", false},
		{"", "", "", "", false},
		{"process_cpu_seconds_total 12.34", "process_cpu_seconds_total", "", "12.34", true},
		{`a_total{topic="t"} 1e+06`, "a_total", `topic="t"`, "1e+06", true},
		{`a_total{topic="b",x="}"} 50 1700000000000`, "a_total", `topic="b",x="}"`, "50", true},
		{"a_total", "", "", "", false},
		{`a_total{topic="t"`, "", "", "", false},
	} {
		name, labels, value, ok := SplitSample(tc.line)
		if name != tc.name || labels != tc.labels || value != tc.value || ok != tc.ok {
			t.Errorf("SplitSample(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tc.line, name, labels, value, ok, tc.name, tc.labels, tc.value, tc.ok)
		}
	}
}

func TestLabelValue(t *testing.T) {
	labels := `x="a,b\"c", topic="orders",y=""`
	for key, want := range map[string]string{"x": `a,b\"c`, "topic": "orders", "y": ""} {
		if got, ok := LabelValue(labels, key); !ok || got != want {
			t.Errorf("LabelValue(%s) = %q, %v; want %q", key, got, ok, want)
		}
	}
	for _, tc := range []struct{ labels, key string }{{labels, "z"}, {"", "x"}, {`x=a`, "x"}, {`x="open`, "x"}} {
		if got, ok := LabelValue(tc.labels, tc.key); ok {
			t.Errorf("LabelValue(%q, %q) = %q, want none", tc.labels, tc.key, got)
		}
	}
}
