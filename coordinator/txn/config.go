package txn

import (
	"fmt"
	"time"
)

// Config is the transaction coordinator's configuration (Kafka's
// TransactionConfig, from the broker's transaction.* keys).
type Config struct {
	// TransactionalIDExpiration: an idle transactional id is forgotten
	// after this (transactional.id.expiration.ms, 7 days).
	TransactionalIDExpiration time.Duration
	// MaxTimeout bounds a producer's transaction.timeout.ms
	// (transaction.max.timeout.ms, 15 minutes).
	MaxTimeout time.Duration
	// AbortTimedOutInterval: how often timed-out transactions are looked
	// for and aborted
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s).
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval: how often expired transactional ids are
	// looked for (transaction.remove.expired.transaction.cleanup.interval.ms,
	// 1 hour).
	RemoveExpiredInterval time.Duration
	// RequestTimeout bounds a WriteTxnMarkers request to a partition
	// leader (request.timeout.ms, 30 s).
	RequestTimeout time.Duration
	// CommitTimeout bounds a write to __transaction_state (Kafka waits
	// up to the transaction's timeout; the runtime has one bound per
	// coordinator). Default 5 s.
	CommitTimeout time.Duration
	// LoadBufferBytes is read at a time when loading a partition
	// (transaction.state.log.load.buffer.size, 5 MiB).
	LoadBufferBytes int32
	// MaxMarkersPerRequest bounds the markers in one WriteTxnMarkers
	// request. Default 500.
	MaxMarkersPerRequest int
	// MarkerRetryBackoff is the wait before a marker that failed with a
	// retriable error is sent again. Default 100 ms.
	MarkerRetryBackoff time.Duration
	// ConcurrentWait bounds how long an AddPartitionsToTxn waits for the
	// producer's previous transaction to finish writing its markers
	// before CONCURRENT_TRANSACTIONS is answered
	// (add.partitions.to.txn.retry.backoff.max.ms, 100 ms; 0: never
	// wait).
	ConcurrentWait time.Duration
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		TransactionalIDExpiration: 7 * 24 * time.Hour,
		MaxTimeout:                15 * time.Minute,
		AbortTimedOutInterval:     10 * time.Second,
		RemoveExpiredInterval:     time.Hour,
		RequestTimeout:            30 * time.Second,
		CommitTimeout:             5 * time.Second,
		LoadBufferBytes:           5 << 20,
		MaxMarkersPerRequest:      500,
		MarkerRetryBackoff:        100 * time.Millisecond,
		ConcurrentWait:            100 * time.Millisecond,
	}
}

func (c *Config) withDefaults() {
	d := DefaultConfig()
	if c.TransactionalIDExpiration <= 0 {
		c.TransactionalIDExpiration = d.TransactionalIDExpiration
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = d.MaxTimeout
	}
	if c.AbortTimedOutInterval <= 0 {
		c.AbortTimedOutInterval = d.AbortTimedOutInterval
	}
	if c.RemoveExpiredInterval <= 0 {
		c.RemoveExpiredInterval = d.RemoveExpiredInterval
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = d.CommitTimeout
	}
	if c.LoadBufferBytes <= 0 {
		c.LoadBufferBytes = d.LoadBufferBytes
	}
	if c.MaxMarkersPerRequest <= 0 {
		c.MaxMarkersPerRequest = d.MaxMarkersPerRequest
	}
	if c.MarkerRetryBackoff <= 0 {
		c.MarkerRetryBackoff = d.MarkerRetryBackoff
	}
	if c.ConcurrentWait < 0 {
		c.ConcurrentWait = 0
	}
}

// Validate checks what the broker's own validation cannot.
func (c Config) Validate() error {
	if c.MaxTimeout > 0 && c.MaxTimeout > time.Duration(1<<31-1)*time.Millisecond {
		return fmt.Errorf("transaction.max.timeout.ms %d is too large", c.MaxTimeout.Milliseconds())
	}
	return nil
}

// validTimeout is Kafka's validateTransactionTimeoutMs.
func (c *Config) validTimeout(ms int32) bool {
	return ms > 0 && int64(ms) <= c.MaxTimeout.Milliseconds()
}
