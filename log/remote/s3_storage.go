package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Part sizes of multipart uploads (S3's minimum part is 5 MiB).
const (
	DefaultS3PartSize int64 = 8 << 20
	MinS3PartSize     int64 = 5 << 20
)

// S3Config configures S3Storage. Credentials come from AccessKeyID and
// SecretAccessKey when set, else from the SDK's default chain
// (environment, ~/.aws files, instance roles).
type S3Config struct {
	Bucket          string
	Prefix          string
	Region          string
	Endpoint        string // "" for AWS
	PathStyle       bool
	AccessKeyID     string
	SecretAccessKey string
	PartSize        int64 // 0: DefaultS3PartSize
}

// S3ConfigFromProperties maps the properties of Aiven's tiered-storage
// plugin for Kafka (with Kafka's "rsm.config." prefix stripped) to an
// S3Config.
func S3ConfigFromProperties(props map[string]string) (S3Config, error) {
	c := S3Config{
		Bucket:          props["storage.s3.bucket.name"],
		Region:          props["storage.s3.region"],
		Endpoint:        props["storage.s3.endpoint.url"],
		AccessKeyID:     props["storage.aws.access.key.id"],
		SecretAccessKey: props["storage.aws.secret.access.key"],
		Prefix:          props["key.prefix"],
	}
	if c.Bucket == "" {
		return c, errors.New("s3 storage: storage.s3.bucket.name is required")
	}
	if v, ok := props["storage.s3.path.style.access.enabled"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("s3 storage: storage.s3.path.style.access.enabled: %q is not a boolean", v)
		}
		c.PathStyle = b
	}
	if v, ok := props["storage.s3.multipart.upload.part.size"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < MinS3PartSize {
			return c, fmt.Errorf("s3 storage: storage.s3.multipart.upload.part.size: %q is not a number of at least %d", v, MinS3PartSize)
		}
		c.PartSize = n
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return c, errors.New("s3 storage: storage.aws.access.key.id and storage.aws.secret.access.key go together")
	}
	return c, nil
}

// S3Storage is a RemoteStorageManager over an S3 bucket. Objects are
// <prefix>/<topic>-<partition>-<topicId>/<startOffset>-<segmentId>.<suffix>.
// Files larger than one part are uploaded in parts, streamed from the
// file; a failed multipart upload is aborted. A failed copy may leave
// objects already uploaded; the caller deletes them (Delete is
// idempotent). Safe for concurrent use.
type S3Storage struct {
	client   *s3.Client
	bucket   string
	prefix   string
	partSize int64
}

var _ RemoteStorageManager = (*S3Storage)(nil)

// NewS3Storage returns a store on the configured bucket.
func NewS3Storage(ctx context.Context, c S3Config) (*S3Storage, error) {
	if c.Bucket == "" {
		return nil, errors.New("s3 storage: no bucket")
	}
	if c.PartSize == 0 {
		c.PartSize = DefaultS3PartSize
	}
	if c.PartSize < MinS3PartSize {
		return nil, fmt.Errorf("s3 storage: part size %d below %d", c.PartSize, MinS3PartSize)
	}
	var opts []func(*config.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 storage: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		// Checksums only where the API requires them: S3-compatible
		// stores often reject or mishandle the trailing checksums the
		// SDK sends by default.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &S3Storage{client: client, bucket: c.Bucket,
		prefix: strings.Trim(c.Prefix, "/"), partSize: c.PartSize}, nil
}

func (s *S3Storage) key(m *RemoteLogSegmentMetadata, suffix string) string {
	k := partitionDirName(m.ID.TopicIdPartition) + "/" + segmentFileBase(m) + suffix
	if s.prefix != "" {
		k = s.prefix + "/" + k
	}
	return k
}

// CopyLogSegmentData uploads the segment's files. It returns no custom
// metadata.
func (s *S3Storage) CopyLogSegmentData(ctx context.Context, m *RemoteLogSegmentMetadata, data LogSegmentData) ([]byte, error) {
	for _, src := range segmentSources(data) {
		if err := s.upload(ctx, src, s.key(m, src.suffix)); err != nil {
			return nil, fmt.Errorf("copy %s %s: %w", m.ID, src.suffix, err)
		}
	}
	return nil, nil
}

func (s *S3Storage) upload(ctx context.Context, src sourceFile, key string) error {
	if src.inMem {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key,
			Body: bytes.NewReader(src.data), ContentLength: aws.Int64(int64(len(src.data)))})
		return err
	}
	if src.path == "" {
		return errors.New("no source file")
	}
	f, err := os.Open(src.path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() <= s.partSize {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key,
			Body: io.NewSectionReader(f, 0, st.Size()), ContentLength: aws.Int64(st.Size())})
		return err
	}
	return s.uploadMultipart(ctx, f, st.Size(), key)
}

// uploadMultipart uploads f in parts read from the file; on error the
// upload is aborted.
func (s *S3Storage) uploadMultipart(ctx context.Context, f *os.File, size int64, key string) error {
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return err
	}
	var parts []types.CompletedPart
	for off, n := int64(0), int32(1); off < size; off, n = off+s.partSize, n+1 {
		l := min(s.partSize, size-off)
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &s.bucket, Key: &key,
			UploadId: up.UploadId, PartNumber: aws.Int32(n),
			Body: io.NewSectionReader(f, off, l), ContentLength: aws.Int64(l)})
		if err != nil {
			s.abort(key, up.UploadId)
			return fmt.Errorf("part %d: %w", n, err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n),
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
			ChecksumCRC64NVME: out.ChecksumCRC64NVME, ChecksumSHA1: out.ChecksumSHA1,
			ChecksumSHA256: out.ChecksumSHA256})
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &s.bucket,
		Key: &key, UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		s.abort(key, up.UploadId)
		return fmt.Errorf("complete: %w", err)
	}
	return nil
}

// abort aborts a multipart upload, on a fresh context: the copy's may be
// cancelled.
func (s *S3Storage) abort(key string, uploadID *string) {
	_, _ = s.client.AbortMultipartUpload(context.Background(),
		&s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: uploadID})
}

// get fetches an object, optionally a byte range; NoSuchKey is
// ErrResourceNotFound.
func (s *S3Storage) get(ctx context.Context, key, rng string) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}
	if rng != "" {
		in.Range = &rng
	}
	out, err := s.client.GetObject(ctx, in)
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return nil, fmt.Errorf("%s: %w", key, ErrResourceNotFound)
	}
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

// FetchLogSegment returns the log's bytes from startPos to endPos
// inclusive (endPos < 0: to the end) with a ranged GET.
func (s *S3Storage) FetchLogSegment(ctx context.Context, m *RemoteLogSegmentMetadata, startPos, endPos int64) (io.ReadCloser, error) {
	if startPos < 0 || (endPos >= 0 && endPos < startPos) {
		return nil, fmt.Errorf("fetch %s: bad range %d-%d", m.ID, startPos, endPos)
	}
	rng := fmt.Sprintf("bytes=%d-", startPos)
	if endPos >= 0 {
		rng += strconv.FormatInt(endPos, 10)
	}
	rc, err := s.get(ctx, s.key(m, suffixLog), rng)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", m.ID, err)
	}
	return rc, nil
}

// FetchIndex returns one index object; a missing one is
// ErrResourceNotFound.
func (s *S3Storage) FetchIndex(ctx context.Context, m *RemoteLogSegmentMetadata, t IndexType) (io.ReadCloser, error) {
	suffix, err := indexSuffix(t)
	if err != nil {
		return nil, err
	}
	rc, err := s.get(ctx, s.key(m, suffix), "")
	if err != nil {
		return nil, fmt.Errorf("fetch %s index of %s: %w", t, m.ID, err)
	}
	return rc, nil
}

// DeleteLogSegmentData removes every object of the segment; it succeeds
// for a segment never stored.
func (s *S3Storage) DeleteLogSegmentData(ctx context.Context, m *RemoteLogSegmentMetadata) error {
	var objs []types.ObjectIdentifier
	for _, suffix := range allSuffixes {
		objs = append(objs, types.ObjectIdentifier{Key: aws.String(s.key(m, suffix))})
	}
	out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &s.bucket,
		Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
	if err != nil {
		return fmt.Errorf("delete %s: %w", m.ID, err)
	}
	for _, e := range out.Errors {
		if aws.ToString(e.Code) != "NoSuchKey" {
			return fmt.Errorf("delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return nil
}

// Close does nothing: the client holds no resources that need release.
func (s *S3Storage) Close() error { return nil }
