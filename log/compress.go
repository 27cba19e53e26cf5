package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Compression of a batch's records section (everything after the 61-byte
// header), as Kafka's clients and broker write it:
//
//   - gzip (1): an RFC 1952 stream; written at level 6 (Kafka's
//     compression.gzip.level default, Deflater.DEFAULT_COMPRESSION).
//   - snappy (2): the Java client (snappy-java's SnappyOutputStream) writes
//     xerial framing: the header "\x82SNAPPY\x00", version 1, compatible
//     version 1, then blocks of (int32 length, raw snappy block) of at most
//     32 KiB uncompressed; franz-go, librdkafka and others write one raw
//     snappy block. Both are read; xerial framing is written, as the
//     broker itself does.
//   - lz4 (3): the LZ4 frame format with independent 64 KiB blocks and no
//     block checksums (Kafka's Lz4BlockOutputStream; its default level
//     uses lz4-java's fast compressor, so the fast level here).
//   - zstd (4): zstd frames; written at level 3 (compression.zstd.level
//     default), klauspost's SpeedDefault.
//
// Decompression is always bounded: the caller passes the most bytes it will
// accept and gets an error wrapping kerr.MessageTooLarge as soon as more
// would be produced, so a small compressed batch cannot make the broker
// allocate without limit. Decoders, encoders and scratch buffers are
// pooled (sync.Pool holds no state that outlives a call; it is a cache).

// Decompression errors wrap kerr.CorruptMessage: the batch passed its CRC
// but its payload does not decode. (Kafka lets the codec's IOException
// surface as a KafkaException, which answers UNKNOWN_SERVER_ERROR.)

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderLen = 16 // magic, version, compatible version
	xerialBlockSize = 32 << 10

	// zstdMinWindow is the smallest window (and output bound) the zstd
	// decoder is given: the 8 MiB the format recommends decoders support.
	// Frames with a larger window than max(limit, 8 MiB) are refused as
	// too large; Kafka's zstd levels up to 21 use at most 64 MiB windows,
	// level 22 uses 128 MiB and needs max.message.bytes of 2 MiB or more.
	zstdMinWindow = 8 << 20

	// maxPooledBuf is the largest scratch buffer returned to the pool, so
	// one huge batch does not pin memory.
	maxPooledBuf = 4 << 20
)

// CodecName returns Kafka's name for a codec id.
func CodecName(codec int) string {
	switch codec {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", codec)
}

// ParseCompressionType maps the compression.type config to a codec.
// "producer" gives producer=true (keep whatever codec the batch has).
func ParseCompressionType(s string) (codec int, producer bool, err error) {
	switch s {
	case "producer", "":
		return 0, true, nil
	case "uncompressed", "none":
		return CodecNone, false, nil
	case "gzip":
		return CodecGzip, false, nil
	case "snappy":
		return CodecSnappy, false, nil
	case "lz4":
		return CodecLZ4, false, nil
	case "zstd":
		return CodecZstd, false, nil
	}
	return 0, false, fmt.Errorf("%w: unknown compression.type %q", kerr.InvalidConfig, s)
}

// Decompress appends the decompression of src, compressed with codec, to
// dst. If the output would exceed limit bytes it stops and returns an error
// wrapping kerr.MessageTooLarge; malformed input gives kerr.CorruptMessage.
func Decompress(dst []byte, codec int, src []byte, limit int) ([]byte, error) {
	switch codec {
	case CodecNone:
		if len(src) > limit {
			return dst, errDecompressedTooLarge(codec, limit)
		}
		return append(dst, src...), nil
	case CodecGzip:
		d := gzipDecoders.Get().(*gzipDecoder)
		defer gzipDecoders.Put(d)
		d.src.Reset(src)
		if err := d.zr.Reset(&d.src); err != nil {
			return dst, errCorruptCompressed(codec, err)
		}
		d.zr.Multistream(true)
		return readAllLimit(dst, &d.zr, codec, limit)
	case CodecSnappy:
		return decodeSnappy(dst, src, limit)
	case CodecLZ4:
		d := lz4Decoders.Get().(*lz4Decoder)
		defer lz4Decoders.Put(d)
		d.src.Reset(src)
		d.zr.Reset(&d.src)
		return readAllLimit(dst, d.zr, codec, limit)
	case CodecZstd:
		// DecodeAll decodes into dst itself (the streaming decoder would
		// allocate a window-sized ring up front, whatever the frame
		// holds), refuses a frame whose declared content size or window
		// is over the decoder's max memory before allocating, and stops
		// decoding once the output passes it. The max memory is at least
		// zstdMinWindow; the output is checked against limit after.
		maxMem := max(limit, zstdMinWindow)
		pool := zstdDecoderPool(maxMem)
		d, err := getZstdDecoder(pool, maxMem)
		if err != nil {
			return dst, err
		}
		defer pool.Put(d)
		start := len(dst)
		out, err := d.DecodeAll(src, dst)
		switch {
		case errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded):
			return dst[:start], errDecompressedTooLarge(codec, limit)
		case err != nil:
			return dst[:start], errCorruptCompressed(codec, err)
		case len(out)-start > limit:
			return dst[:start], errDecompressedTooLarge(codec, limit)
		}
		return out, nil
	}
	return dst, fmt.Errorf("%w: unknown compression codec %d", kerr.CorruptMessage, codec)
}

// Compress appends src compressed with codec to dst.
func Compress(dst []byte, codec int, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		e := gzipEncoders.Get().(*gzipEncoder)
		defer gzipEncoders.Put(e)
		e.w.b = dst
		e.zw.Reset(&e.w)
		if _, err := e.zw.Write(src); err != nil {
			return dst, err
		}
		if err := e.zw.Close(); err != nil {
			return dst, err
		}
		out := e.w.b
		e.w.b = nil
		return out, nil
	case CodecSnappy:
		// Reserve the worst case so xerial.Encode writes in place.
		blocks := (len(src) + xerialBlockSize - 1) / xerialBlockSize
		need := xerialHeaderLen + blocks*(4+s2.MaxEncodedLen(xerialBlockSize))
		start := len(dst)
		dst = grow(dst, need)
		// xerial.Encode writes the header only into an empty dst.
		out := xerial.Encode(dst[start:start], src)
		return dst[:start+len(out)], nil
	case CodecLZ4:
		e := lz4Encoders.Get().(*lz4Encoder)
		defer lz4Encoders.Put(e)
		e.w.b = dst
		e.zw.Reset(&e.w)
		if _, err := e.zw.Write(src); err != nil {
			return dst, err
		}
		if err := e.zw.Close(); err != nil {
			return dst, err
		}
		out := e.w.b
		e.w.b = nil
		return out, nil
	case CodecZstd:
		e, err := getZstdEncoder()
		if err != nil {
			return dst, err
		}
		defer zstdEncoders.Put(e)
		return e.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: unknown compression codec %d", kerr.UnsupportedCompressionType, codec)
}

// decodeSnappy decodes raw snappy or xerial-framed snappy, bounded.
func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < len(xerialMagic) || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return decodeSnappyBlock(dst, src, len(dst)+limit)
	}
	if len(src) < xerialHeaderLen {
		return dst, errCorruptCompressed(CodecSnappy, errors.New("truncated xerial header"))
	}
	end := len(dst) + limit
	for p := xerialHeaderLen; p < len(src); {
		if len(src)-p < 4 {
			return dst, errCorruptCompressed(CodecSnappy, errors.New("truncated xerial block length"))
		}
		n := int(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n < 0 || n > len(src)-p {
			return dst, errCorruptCompressed(CodecSnappy, errors.New("xerial block length past the end"))
		}
		var err error
		if dst, err = decodeSnappyBlock(dst, src[p:p+n], end); err != nil {
			return dst, err
		}
		p += n
	}
	return dst, nil
}

// decodeSnappyBlock appends one raw snappy block, failing if dst would grow
// past end.
func decodeSnappyBlock(dst, block []byte, end int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, errCorruptCompressed(CodecSnappy, err)
	}
	if n > end-len(dst) {
		return dst, errDecompressedTooLarge(CodecSnappy, end)
	}
	start := len(dst)
	dst = grow(dst, n)
	if _, err := s2.Decode(dst[start:start+n], block); err != nil {
		return dst[:start], errCorruptCompressed(CodecSnappy, err)
	}
	return dst[:start+n], nil
}

// readAllLimit appends everything r yields to dst, failing once more than
// limit bytes were read.
func readAllLimit(dst []byte, r io.Reader, codec, limit int) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = grow(dst, 32<<10)
		}
		// Read at most one byte past the limit, to detect the overflow.
		room := cap(dst) - len(dst)
		if over := start + limit + 1 - len(dst); room > over {
			room = over
		}
		n, err := r.Read(dst[len(dst) : len(dst)+room])
		dst = dst[:len(dst)+n]
		if len(dst)-start > limit {
			return dst[:start], errDecompressedTooLarge(codec, limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst[:start], errCorruptCompressed(codec, err)
		}
	}
}

// grow makes room for n more bytes after len(dst).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	c := 2 * cap(dst)
	if c < len(dst)+n {
		c = len(dst) + n
	}
	nb := make([]byte, len(dst), c)
	copy(nb, dst)
	return nb
}

func errDecompressedTooLarge(codec, limit int) error {
	return fmt.Errorf("%w: %s record batch decompresses to more than %d bytes", kerr.MessageTooLarge, CodecName(codec), limit)
}

func errCorruptCompressed(codec int, err error) error {
	return fmt.Errorf("%w: cannot decompress %s record batch: %v", kerr.CorruptMessage, CodecName(codec), err)
}

// appendWriter is an io.Writer appending to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type gzipDecoder struct {
	src bytes.Reader
	zr  gzip.Reader
}

type lz4Decoder struct {
	src bytes.Reader
	zr  *lz4.Reader
}

type gzipEncoder struct {
	w  appendWriter
	zw *gzip.Writer
}

type lz4Encoder struct {
	w  appendWriter
	zw *lz4.Writer
}

var (
	gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}
	lz4Decoders  = sync.Pool{New: func() any { return &lz4Decoder{zr: lz4.NewReader(nil)} }}
	zstdDecoders sync.Map // max memory -> *sync.Pool of *zstd.Decoder
	gzipEncoders = sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return &gzipEncoder{zw: zw}
	}}
	lz4Encoders = sync.Pool{New: func() any {
		zw := lz4.NewWriter(nil)
		_ = zw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lz4.Fast), lz4.ConcurrencyOption(1))
		return &lz4Encoder{zw: zw}
	}}
	zstdEncoders sync.Pool
	// scratch holds decompression and recompression buffers.
	scratch sync.Pool
)

// zstdDecoderPool returns the pool of decoders whose max memory is maxMem.
// There is one per distinct value, that is per distinct max.message.bytes.
func zstdDecoderPool(maxMem int) *sync.Pool {
	if p, ok := zstdDecoders.Load(maxMem); ok {
		return p.(*sync.Pool)
	}
	p, _ := zstdDecoders.LoadOrStore(maxMem, new(sync.Pool))
	return p.(*sync.Pool)
}

func getZstdDecoder(pool *sync.Pool, maxMem int) (*zstd.Decoder, error) {
	if d, ok := pool.Get().(*zstd.Decoder); ok {
		return d, nil
	}
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // no goroutines
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(maxMem)),
		zstd.WithDecoderMaxWindow(uint64(maxMem)),
	)
}

func getZstdEncoder() (*zstd.Encoder, error) {
	if e, ok := zstdEncoders.Get().(*zstd.Encoder); ok {
		return e, nil
	}
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
}

// getScratch returns an empty pooled buffer.
func getScratch() *[]byte {
	if b, ok := scratch.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func putScratch(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		scratch.Put(b)
	}
}
