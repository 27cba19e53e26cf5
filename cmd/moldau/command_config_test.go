package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandConfigOpts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if opts, err := commandConfigOpts(write("plain", "security.protocol=PLAINTEXT\n")); err != nil || opts != nil {
		t.Errorf("PLAINTEXT: %v %v", opts, err)
	}
	if _, err := commandConfigOpts(write("sasl", "security.protocol=SASL_SSL\n")); err == nil || !strings.Contains(err.Error(), "GSSAPI") {
		t.Errorf("SASL_SSL: %v", err)
	}
	if _, err := commandConfigOpts(write("noca", "security.protocol=SSL\nssl.ca.location="+filepath.Join(dir, "missing.pem")+"\n")); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("missing CA: %v", err)
	}
	if opts, err := commandConfigOpts(write("ssl", "security.protocol=SSL\n")); err != nil || len(opts) != 1 {
		t.Errorf("SSL with the system roots: %v %v", opts, err)
	}
	jaas := `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";` + "\n"
	if opts, err := commandConfigOpts(write("scram", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+jaas)); err != nil || len(opts) != 1 {
		t.Errorf("SASL_PLAINTEXT SCRAM: %v %v", opts, err)
	}
	if opts, err := commandConfigOpts(write("plainssl", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=a\nsasl.password=b\n")); err != nil || len(opts) != 2 {
		t.Errorf("SASL_SSL PLAIN: %v %v", opts, err)
	}
	if _, err := commandConfigOpts(write("nopass", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=a\n")); err == nil || !strings.Contains(err.Error(), "username and password") {
		t.Errorf("no password: %v", err)
	}
	if _, err := commandConfigOpts(write("badjaas", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=x required a=1;\n")); err == nil || !strings.Contains(err.Error(), "sasl.jaas.config") {
		t.Errorf("bad JAAS: %v", err)
	}
}
