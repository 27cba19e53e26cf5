package log

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Encoders as other clients use them, straight from the libraries.

func gzipStd(b []byte) []byte {
	var buf bytes.Buffer
	w := stdgzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// snappyRaw is one raw snappy block (franz-go, librdkafka).
func snappyRaw(b []byte) []byte { return s2.EncodeSnappy(nil, b) }

// snappyXerial is the Java client's framing.
func snappyXerial(b []byte) []byte { return xerial.Encode(nil, b) }

// lz4Default is pierrec's frame writer with its defaults (4 MiB blocks,
// content checksum), as franz-go writes.
func lz4Default(b []byte) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// lz4BlockChecksum has block checksums and 256 KiB blocks.
func lz4BlockChecksum(b []byte) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	w.Apply(lz4.BlockChecksumOption(true), lz4.BlockSizeOption(lz4.Block256Kb))
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func zstdEncodeAll(b []byte) []byte {
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	defer e.Close()
	return e.EncodeAll(b, nil)
}

// zstdStreamed is a frame written by a stream, without a content size in
// its header (as zstd-jni's ZstdOutputStream writes).
func zstdStreamed(b []byte) []byte {
	var buf bytes.Buffer
	e, _ := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	e.Write(b)
	e.Close()
	return buf.Bytes()
}

var testCodecEncoders = []struct {
	name     string
	codec    int
	compress func([]byte) []byte
}{
	{"none", CodecNone, nil},
	{"gzip", CodecGzip, nil},
	{"gzip/stdlib", CodecGzip, gzipStd},
	{"snappy", CodecSnappy, nil},
	{"snappy/raw", CodecSnappy, snappyRaw},
	{"snappy/xerial", CodecSnappy, snappyXerial},
	{"lz4", CodecLZ4, nil},
	{"lz4/pierrec-default", CodecLZ4, lz4Default},
	{"lz4/block-checksum", CodecLZ4, lz4BlockChecksum},
	{"zstd", CodecZstd, nil},
	{"zstd/encodeall", CodecZstd, zstdEncodeAll},
	{"zstd/stream", CodecZstd, zstdStreamed},
}

func compressibleData(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"kafka ", "moldau ", "record ", "batch ", "offset ", "\x00\x01", "topic "}
	var b []byte
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
	}
	return b[:n]
}

func randomData(n int) []byte {
	r := rand.NewChaCha8([32]byte{1})
	b := make([]byte, n)
	r.Read(b)
	return b
}

func TestCompressRoundTrip(t *testing.T) {
	inputs := map[string][]byte{
		"empty":  {},
		"small":  []byte("hello"),
		"text":   compressibleData(300 << 10),
		"random": randomData(100 << 10),
	}
	for _, tc := range testCodecEncoders {
		for name, in := range inputs {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				var enc []byte
				if tc.compress != nil {
					enc = tc.compress(in)
				} else {
					var err error
					prefix := []byte("prefix")
					enc, err = Compress(bytes.Clone(prefix), tc.codec, in)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.HasPrefix(enc, prefix) {
						t.Fatal("Compress did not append")
					}
					enc = enc[len(prefix):]
				}
				dec, err := Decompress([]byte("x"), tc.codec, enc, len(in))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dec[1:], in) || dec[0] != 'x' {
					t.Fatalf("round trip differs: %d bytes, want %d", len(dec)-1, len(in))
				}
				if len(in) > 0 {
					if _, err := Decompress(nil, tc.codec, enc, len(in)-1); !errors.Is(err, kerr.MessageTooLarge) {
						t.Fatalf("limit one short: err %v", err)
					}
				}
			})
		}
	}
}

func TestCompressFormats(t *testing.T) {
	in := compressibleData(100 << 10)
	// Snappy is written with xerial framing in 32 KiB blocks, as Kafka.
	enc, _ := Compress(nil, CodecSnappy, in)
	if !bytes.HasPrefix(enc, append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1)) {
		t.Errorf("snappy header % x", enc[:16])
	}
	if got, err := xerial.Decode(enc); err != nil || !bytes.Equal(got, in) {
		t.Errorf("xerial.Decode: %v", err)
	}
	// LZ4: a frame with 64 KiB blocks that pierrec reads.
	enc, _ = Compress(nil, CodecLZ4, in)
	if enc[4]&0x20 == 0 || (enc[5]>>4)&7 != 4 {
		t.Errorf("lz4 FLG %08b BD %08b: want independent 64 KiB blocks", enc[4], enc[5])
	}
	got, err := readAll(lz4.NewReader(bytes.NewReader(enc)))
	if err != nil || !bytes.Equal(got, in) {
		t.Errorf("pierrec lz4 reader: %v", err)
	}
	// gzip readable by the standard library.
	enc, _ = Compress(nil, CodecGzip, in)
	zr, err := stdgzip.NewReader(bytes.NewReader(enc))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(zr); err != nil || !bytes.Equal(got, in) {
		t.Errorf("stdlib gzip: %v", err)
	}
	// zstd: a single frame.
	enc, _ = Compress(nil, CodecZstd, in)
	var h zstd.Header
	if err := h.Decode(enc); err != nil || !h.HasFCS || h.FrameContentSize != uint64(len(in)) {
		t.Errorf("zstd header %+v: %v", h, err)
	}
}

func readAll(r interface{ Read([]byte) (int, error) }) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

func TestDecompressZstdDeclaredSizeRefusedEarly(t *testing.T) {
	// A frame whose header declares more content than the limit is
	// refused before decoding.
	enc := zstdEncodeAll(make([]byte, 100<<10))
	var h zstd.Header
	if err := h.Decode(enc); err != nil || !h.HasFCS {
		t.Fatalf("header %+v %v", h, err)
	}
	if _, err := Decompress(nil, CodecZstd, enc, 100<<10-1); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("err %v", err)
	}
}

func TestDecompressCorrupt(t *testing.T) {
	for codec := CodecGzip; codec <= CodecZstd; codec++ {
		for _, in := range [][]byte{{}, {1}, []byte("garbage that is not compressed data at all")} {
			_, err := Decompress(nil, codec, in, 1<<20)
			if codec == CodecSnappy && len(in) == 0 {
				continue // an empty raw snappy block is invalid too, but any error is fine
			}
			if err != nil && !errors.Is(err, kerr.CorruptMessage) {
				t.Errorf("%s %q: err %v, want CorruptMessage", CodecName(codec), in, err)
			}
		}
	}
	if _, err := Decompress(nil, 9, []byte{1}, 10); !errors.Is(err, kerr.CorruptMessage) {
		t.Errorf("unknown codec: %v", err)
	}
	if _, err := Compress(nil, 9, []byte{1}); !errors.Is(err, kerr.UnsupportedCompressionType) {
		t.Errorf("unknown codec: %v", err)
	}
}

func TestParseCompressionType(t *testing.T) {
	for s, want := range map[string]int{"uncompressed": CodecNone, "gzip": CodecGzip, "snappy": CodecSnappy, "lz4": CodecLZ4, "zstd": CodecZstd} {
		if c, p, err := ParseCompressionType(s); c != want || p || err != nil {
			t.Errorf("%s: %d %v %v", s, c, p, err)
		}
	}
	if _, p, err := ParseCompressionType("producer"); !p || err != nil {
		t.Error("producer")
	}
	if _, _, err := ParseCompressionType("brotli"); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("brotli: %v", err)
	}
}

func BenchmarkCompress(b *testing.B) {
	in := compressibleData(16 << 10)
	for codec := CodecGzip; codec <= CodecZstd; codec++ {
		b.Run(CodecName(codec), func(b *testing.B) {
			var dst []byte
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = Compress(dst[:0], codec, in)
			}
		})
	}
}

func BenchmarkDecompress(b *testing.B) {
	in := compressibleData(16 << 10)
	for codec := CodecGzip; codec <= CodecZstd; codec++ {
		b.Run(CodecName(codec), func(b *testing.B) {
			enc, _ := Compress(nil, codec, in)
			var dst []byte
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = Decompress(dst[:0], codec, enc, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
