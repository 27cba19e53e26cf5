package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchTLSOpts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if opts, err := benchTLSOpts(write("plain", "security.protocol=PLAINTEXT\n")); err != nil || opts != nil {
		t.Errorf("PLAINTEXT: %v %v", opts, err)
	}
	if _, err := benchTLSOpts(write("sasl", "security.protocol=SASL_SSL\n")); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("SASL_SSL: %v", err)
	}
	if _, err := benchTLSOpts(write("noca", "security.protocol=SSL\nssl.ca.location="+filepath.Join(dir, "missing.pem")+"\n")); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("missing CA: %v", err)
	}
	if opts, err := benchTLSOpts(write("ssl", "security.protocol=SSL\n")); err != nil || len(opts) != 1 {
		t.Errorf("SSL with the system roots: %v %v", opts, err)
	}
}
