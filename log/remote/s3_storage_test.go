package remote

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const versitygwInstall = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// findVersitygw finds the versitygw binary: $MOLDAU_VERSITYGW, PATH, or
// $(go env GOPATH)/bin.
func findVersitygw(t *testing.T) string {
	if p := os.Getenv("MOLDAU_VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(d, "bin", "versitygw")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	t.Fatalf("versitygw not found (MOLDAU_VERSITYGW, PATH, $(go env GOPATH)/bin): run  %s", versitygwInstall)
	return ""
}

// startVersitygw runs an S3 server on a POSIX folder and returns its
// endpoint; it is killed when the test ends.
func startVersitygw(t *testing.T, access, secret string) string {
	bin := findVersitygw(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--access", access, "--secret", secret, "--port", addr, "--quiet",
		"posix", t.TempDir())
	out, _ := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); out.Close() })
	endpoint := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(endpoint)
		if err == nil {
			resp.Body.Close()
			return endpoint
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("versitygw did not answer on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestS3Storage(t *testing.T) {
	const access, secret, bucket = "moldau-test", "moldau-test-secret", "tiered"
	endpoint := startVersitygw(t, access, secret)
	ctx := context.Background()
	s, err := NewS3Storage(ctx, S3Config{Bucket: bucket, Prefix: "cluster-1", Region: "us-east-1",
		Endpoint: endpoint, PathStyle: true, AccessKeyID: access, SecretAccessKey: secret,
		PartSize: MinS3PartSize})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	testRemoteStorageManager(t, s, 12<<20)
}

func TestS3ConfigFromProperties(t *testing.T) {
	c, err := S3ConfigFromProperties(map[string]string{
		"storage.s3.bucket.name": "b", "storage.s3.region": "eu-west-1",
		"storage.s3.endpoint.url": "http://x", "storage.s3.path.style.access.enabled": "true",
		"storage.aws.access.key.id": "k", "storage.aws.secret.access.key": "s",
		"storage.s3.multipart.upload.part.size": "6291456", "key.prefix": "p/",
	})
	want := S3Config{Bucket: "b", Region: "eu-west-1", Endpoint: "http://x", PathStyle: true,
		AccessKeyID: "k", SecretAccessKey: "s", PartSize: 6 << 20, Prefix: "p/"}
	if err != nil || c != want {
		t.Fatalf("got %+v, %v; want %+v", c, err, want)
	}
	for _, bad := range []map[string]string{
		{},
		{"storage.s3.bucket.name": "b", "storage.s3.multipart.upload.part.size": "x"},
		{"storage.s3.bucket.name": "b", "storage.s3.multipart.upload.part.size": "1024"},
		{"storage.s3.bucket.name": "b", "storage.s3.path.style.access.enabled": "maybe"},
	} {
		if _, err := S3ConfigFromProperties(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
