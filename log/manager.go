package log

import (
	"github.com/moldau/moldau/broker/routine"

	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moldau/moldau/broker/uuid"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ManagerConfig configures a Manager (Kafka's LogManager).
type ManagerConfig struct {
	Dirs   []string     // log.dirs
	FS     FS           // nil: the OS
	Logger *slog.Logger // nil: slog.Default()
	Now    func() time.Time
	// ConfigFor resolves the Config of a topic found on disk at start-up
	// (its overrides plus broker defaults). Nil: DefaultConfig.
	ConfigFor func(topic string) Config
	// TopicIDFor returns the topic ID the cluster knows for a topic, so
	// a log left over from a deleted and re-created topic is not reused.
	// Nil: accept whatever is on disk.
	TopicIDFor func(topic string) ([16]byte, bool)

	RecoveryThreadsPerDataDir          int           // num.recovery.threads.per.data.dir, default 2
	RetentionCheckInterval             time.Duration // log.retention.check.interval.ms, default 5m
	FlushSchedulerInterval             time.Duration // log.flush.scheduler.interval.ms, default MaxInt64
	FlushOffsetCheckpointInterval      time.Duration // log.flush.offset.checkpoint.interval.ms, default 60s
	FlushStartOffsetCheckpointInterval time.Duration // log.flush.start.offset.checkpoint.interval.ms, default 60s

	// ProducerIDExpirationMs returns producer.id.expiration.ms (a
	// dynamic broker config, so it is read each time). Nil: 1 day.
	ProducerIDExpirationMs func() int64
	// ProducerIDExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms, default 10 minutes.
	ProducerIDExpirationCheckInterval time.Duration

	// Registerer receives per-partition metrics (kafka_log_log_*) and the
	// cleaner's (kafka_log_logcleaner*). Nil: none.
	Registerer prometheus.Registerer

	// Cleaner configures the log cleaner (log.cleaner.*); the zero value
	// has it off.
	Cleaner CleanerConfig
	// Scrub configures the log scrubber (moldau.log.scrub.*); the zero
	// value has it off.
	Scrub ScrubConfig
	// AlterLogDirsBytesPerSecond caps how fast a log moved between log
	// dirs is copied (Kafka's replica.alter.log.dirs.io.max.bytes.per.second
	// dynamic broker config, read for each chunk copied); nil or <= 0:
	// unlimited.
	AlterLogDirsBytesPerSecond func() int64
}

func (c ManagerConfig) withDefaults() ManagerConfig {
	if c.FS == nil {
		c.FS = OSFS{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ConfigFor == nil {
		c.ConfigFor = func(string) Config { return DefaultConfig() }
	}
	if c.RecoveryThreadsPerDataDir <= 0 {
		c.RecoveryThreadsPerDataDir = 2
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = 5 * time.Minute
	}
	if c.FlushSchedulerInterval <= 0 {
		c.FlushSchedulerInterval = math.MaxInt64
	}
	if c.FlushOffsetCheckpointInterval <= 0 {
		c.FlushOffsetCheckpointInterval = time.Minute
	}
	if c.FlushStartOffsetCheckpointInterval <= 0 {
		c.FlushStartOffsetCheckpointInterval = time.Minute
	}
	if c.ProducerIDExpirationMs == nil {
		c.ProducerIDExpirationMs = func() int64 { return defaultPidExpirationMs }
	}
	if c.ProducerIDExpirationCheckInterval <= 0 {
		c.ProducerIDExpirationCheckInterval = 10 * time.Minute
	}
	if c.Scrub.Interval <= 0 {
		c.Scrub.Interval = 7 * 24 * time.Hour
	}
	if c.Scrub.BytesPerSecond <= 0 {
		c.Scrub.BytesPerSecond = 1 << 20
	}
	return c
}

// deleteCheckInterval is how often due file deletions are run.
const deleteCheckInterval = time.Second

// Manager owns every partition log in log.dirs (Kafka's LogManager).
//
// Lock order: Manager.mu before Log.mu before Log.segMu; logDir.ckptMu is
// taken with no other lock held.
type Manager struct {
	cfg     ManagerConfig
	fsys    FS
	logger  *slog.Logger
	bg      routine.Group
	deletes deleteQueue
	metrics *logCollector
	// cleaner compacts logs (nil if log.cleaner.enable is off).
	cleaner        *LogCleaner
	cleanerMetrics *cleanerCollector
	scrubber       *scrubber

	mu   sync.RWMutex
	logs map[TopicPartition]*Log
	// perDir counts the logs in each dir (by path), so that placing a
	// new log does not walk every log.
	perDir map[string]int
	// offline are the partitions whose logs are in an offline dir
	// (see dir_failure.go), with that dir.
	offline map[TopicPartition]string
	// preferred are the log dirs AlterLogDir asked for partitions not
	// hosted yet (Kafka's preferredLogDirs); resume the moves a restart
	// interrupted, resumed by Start (future.go).
	preferred map[TopicPartition]string
	resume    map[TopicPartition]interruptedMove
	// dirs is set before any log is loaded and never changes.
	dirs    []*logDir
	started bool
	closed  bool
	// closing is set once Close began: deletions then run at once. Atomic
	// so that Logs (holding Log.mu) never take Manager.mu.
	closing atomic.Bool

	closeOnce sync.Once
	closeErr  error
	// brokerEpoch goes into the clean shutdown markers (-1: unknown).
	brokerEpoch atomic.Int64
	loads       []DirLoadResult
	// onDirFailure is told of the partitions of a failed dir.
	onDirFailure atomic.Pointer[func(dir string, partitions []TopicPartition)]
	// onDirOffline is told of every failed dir and the dirs still online.
	onDirOffline atomic.Pointer[func(dir string, online []string)]
	// onLogMoved is told of every log moved between log dirs.
	onLogMoved atomic.Pointer[func(TopicPartition)]
}

type logDir struct {
	path   string
	health dirHealth // failed: offline until restart
	// unlisted: the dir failed before its partitions could be listed,
	// so any partition may be there.
	unlisted bool
	ckptMu   sync.Mutex
}

// failed returns why the dir is offline, or nil.
func (d *logDir) failed() error { return d.health.failed() }

// DirLoadResult says what loading one log dir did.
type DirLoadResult struct {
	Dir string
	// CleanShutdown: the dir had .kafka_cleanshutdown, recovery was skipped.
	CleanShutdown bool
	// BrokerEpoch is the broker epoch the marker holds (-1: none, or
	// a marker without one).
	BrokerEpoch       int64
	Logs              int
	RecoveredSegments int
	TruncatedBytes    int64
	Err               error
	Results           []LoadResult
}

// NewManager loads every log found in the dirs, running recovery where the
// last shutdown was not clean. A dir that cannot be loaded is offline
// (DirInfos reports it, its partitions answer KAFKA_STORAGE_ERROR); if
// every dir is, NewManager fails. Too many open files fails it too, with a
// *FileLimitError that says how many the logs need: the limit must be
// raised, and a dir taken offline for it would hide its data.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	cfg = cfg.withDefaults()
	m := &Manager{
		cfg: cfg, logger: cfg.Logger,
		logs: make(map[TopicPartition]*Log), perDir: make(map[string]int),
		offline:   make(map[TopicPartition]string),
		preferred: make(map[TopicPartition]string), resume: make(map[TopicPartition]interruptedMove),
	}
	m.brokerEpoch.Store(-1)
	m.fsys = &dirFailureFS{inner: cfg.FS, report: m.reportIOError}
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("log: no log.dirs")
	}
	for _, path := range cfg.Dirs {
		m.dirs = append(m.dirs, &logDir{path: filepath.Clean(path)})
	}
	m.settleFutureDirs()
	online := 0
	var causes []string
	for _, d := range m.dirs {
		res := m.loadDir(d)
		m.loads = append(m.loads, res)
		if res.Err != nil && IsTooManyOpenFiles(res.Err) {
			m.abortLoad()
			return nil, newFileLimitError(cfg.FS, cfg.Dirs, res.Err)
		}
		if res.Err != nil {
			m.failDir(d, &DirFailure{Dir: d.path, Op: "load", Path: d.path, Err: res.Err, At: cfg.Now()})
		}
		if err := d.failed(); err != nil {
			m.handleLogDirFailure(d)
			causes = append(causes, err.Error())
			continue
		}
		online++
	}
	if online == 0 {
		m.abortLoad()
		return nil, fmt.Errorf("%w: no log dir could be loaded: %s", kerr.KafkaStorageError, strings.Join(causes, "; "))
	}
	// Record what was loaded (and recovered) right away, so the
	// checkpoints on disk always describe the logs there.
	if err := m.CheckpointAll(); err != nil {
		m.logger.Warn("writing checkpoints after loading failed", "err", err)
	}
	m.scrubber = newScrubber(m, cfg.Scrub)
	if cfg.Registerer != nil {
		m.metrics = newLogCollector(m)
		if err := cfg.Registerer.Register(m.metrics); err != nil {
			m.closeLogs()
			return nil, fmt.Errorf("log: registering metrics: %w", err)
		}
	}
	if err := m.newCleanerFor(cfg); err != nil {
		if m.metrics != nil {
			cfg.Registerer.Unregister(m.metrics)
		}
		m.abortLoad()
		return nil, err
	}
	return m, nil
}

// LoadResults says, per log dir, what start-up did.
func (m *Manager) LoadResults() []DirLoadResult { return m.loads }

// PreviousBrokerEpoch is the broker epoch of the last clean shutdown
// (Kafka's readBrokerEpochFromCleanShutdownFiles): every log dir online,
// each with a clean shutdown marker holding the same epoch; -1 otherwise.
// The broker sends it with its registration, so that the controller can
// tell a clean restart from an unclean one (KIP-966).
func (m *Manager) PreviousBrokerEpoch() int64 {
	epoch := int64(-1)
	for _, r := range m.loads {
		if r.Err != nil || !r.CleanShutdown || r.BrokerEpoch < 0 || epoch >= 0 && r.BrokerEpoch != epoch {
			return -1
		}
		epoch = r.BrokerEpoch
	}
	return epoch
}

// SetBrokerEpoch sets the broker epoch Close writes into the clean
// shutdown markers.
func (m *Manager) SetBrokerEpoch(epoch int64) { m.brokerEpoch.Store(epoch) }

func (m *Manager) closeLogs() {
	for _, l := range m.logs {
		l.Close()
	}
}

// abortLoad undoes a NewManager that fails: the logs loaded are closed
// and the goroutines of dir failures waited for.
func (m *Manager) abortLoad() {
	m.bg.StopAndWait()
	m.mu.Lock()
	m.closeLogs()
	m.mu.Unlock()
}

// MetadataLogDirName is the directory of the metadata quorum's log
// (__cluster_metadata-0) in metadata.log.dir, which may be a log dir.
const MetadataLogDirName = "__cluster_metadata-0"

// parseTopicPartitionDir parses "<topic>-<partition>".
func parseTopicPartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	tp := TopicPartition{Topic: name[:i], Partition: int32(p)}
	return tp, validTopic(tp.Topic) == nil
}

// validTopic checks Kafka's topic name rules.
func validTopic(t string) error {
	if t == "" || t == "." || t == ".." || len(t) > 249 {
		return fmt.Errorf("%w: illegal topic name %q", kerr.InvalidTopicException, t)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: illegal character %q in topic name %q", kerr.InvalidTopicException, c, t)
		}
	}
	return nil
}

// loadDir loads the logs of one log dir, in parallel
// (num.recovery.threads.per.data.dir); a dir it cannot read goes offline
// (Kafka's LogManager.loadLogs).
func (m *Manager) loadDir(d *logDir) (res DirLoadResult) {
	res.Dir = d.path
	fsys := m.fsys
	offline := func(err error) DirLoadResult {
		res.Err = err
		m.listOffline(d)
		return res
	}
	if err := fsys.MkdirAll(d.path, 0o755); err != nil {
		return offline(err)
	}
	marker := filepath.Join(d.path, CleanShutdownFile)
	clean, err := exists(fsys, marker)
	if err != nil {
		return offline(err)
	}
	res.CleanShutdown, res.BrokerEpoch = clean, -1
	if clean {
		res.BrokerEpoch = readCleanShutdownEpoch(fsys, marker)
	}
	ckpts, err := m.readDirCheckpoints(d.path)
	if err != nil {
		return offline(err)
	}
	jobs, err := m.partitionDirs(d.path)
	if err != nil {
		return offline(err)
	}
	results := make([]LoadResult, len(jobs))
	logs := make([]*Log, len(jobs))
	errs := make([]error, len(jobs))
	inParallel(len(jobs), m.cfg.RecoveryThreadsPerDataDir, func(i int) {
		logs[i], results[i], errs[i] = loadLog(m.logParamsFor(d, jobs[i], clean && !ckpts.malformedRecoveryPoints, ckpts))
	})
	res.Results = results
	if res.Err = m.addLoadedLogs(d, &res, jobs, logs, errs); res.Err != nil {
		return res
	}
	switch {
	case res.CleanShutdown:
		if err := fsys.Remove(marker); err != nil && !os.IsNotExist(err) {
			res.Err = err
			return res
		}
		if err := fsys.SyncDir(d.path); err != nil {
			res.Err = err
			return res
		}
		m.logger.Info("loaded log dir after a clean shutdown: recovery skipped", "dir", d.path, "logs", res.Logs)
	case res.Logs == 0:
		m.logger.Info("loaded log dir: no logs yet", "dir", d.path)
	default:
		m.logger.Info("loaded log dir after an unclean shutdown: recovery ran", "dir", d.path, "logs", res.Logs,
			"recovered_segments", res.RecoveredSegments, "truncated_bytes", res.TruncatedBytes)
	}
	return res
}

// dirCheckpoints are a log dir's offset checkpoints.
type dirCheckpoints struct {
	recoveryPoints, logStarts, highWatermarks map[TopicPartition]int64
	// malformedRecoveryPoints: recovery-point-offset-checkpoint was
	// malformed, so every log is recovered.
	malformedRecoveryPoints bool
}

// readDirCheckpoints reads a log dir's checkpoints. A malformed one is
// ignored (recovery rebuilds what it said); one that cannot be read (too
// many open files, a failing disk) fails the dir's load.
func (m *Manager) readDirCheckpoints(dir string) (dirCheckpoints, error) {
	var c dirCheckpoints
	var ckptErr error
	read := func(name string) map[TopicPartition]int64 {
		offsets, err := ReadOffsetCheckpoint(m.fsys, filepath.Join(dir, name))
		var pe *fs.PathError
		if errors.As(err, &pe) {
			ckptErr = errors.Join(ckptErr, err)
		} else if err != nil {
			m.logger.Warn("ignoring malformed checkpoint", "dir", dir, "file", name, "err", err)
			if name == RecoveryPointCheckpointFile {
				c.malformedRecoveryPoints = true
			}
		}
		if offsets == nil {
			offsets = map[TopicPartition]int64{}
		}
		return offsets
	}
	c.recoveryPoints = read(RecoveryPointCheckpointFile)
	c.logStarts = read(LogStartOffsetCheckpointFile)
	c.highWatermarks = read(ReplicationCheckpointFile)
	return c, ckptErr
}

// partitionDir is one partition's directory found in a log dir.
type partitionDir struct {
	tp  TopicPartition
	dir string
}

// partitionDirs lists the partition directories of a log dir to load,
// removing those an unfinished delete left and renaming stray those of an
// older topic of the same name.
func (m *Manager) partitionDirs(dir string) ([]partitionDir, error) {
	entries, err := m.fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var dirs []partitionDir
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		full := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, "-delete"):
			m.logger.Info("removing log left by an unfinished delete", "dir", full)
			if err := m.fsys.RemoveAll(full); err != nil {
				m.logger.Warn("removing deleted log failed", "dir", full, "err", err)
			}
			continue
		case strings.HasSuffix(name, "-stray"), strings.HasSuffix(name, "-future"):
			continue
		case name == MetadataLogDirName:
			// The metadata quorum's log, opened by broker/raft on its
			// own (Kafka's LogManager skips it too): never a partition
			// of this manager, never a stray to delete.
			continue
		}
		tp, ok := parseTopicPartitionDir(name)
		if !ok || m.renamedStray(tp, full) {
			continue
		}
		dirs = append(dirs, partitionDir{tp, full})
	}
	return dirs, nil
}

// renamedStray renames the log in full stray if it belongs to an older
// topic of the same name, and says whether it did.
func (m *Manager) renamedStray(tp TopicPartition, full string) bool {
	if m.cfg.TopicIDFor == nil {
		return false
	}
	want, known := m.cfg.TopicIDFor(tp.Topic)
	if !known {
		return false
	}
	have, ok, err := readPartitionMetadata(m.fsys, full)
	if err != nil || !ok || have == want {
		return false
	}
	stray := full + "." + uuid.UUID(have).String() + "-stray"
	m.logger.Warn("log belongs to an older topic of the same name; renaming it stray", "dir", full, "stray", stray)
	if err := m.fsys.Rename(full, stray); err != nil {
		m.logger.Warn("renaming stray log failed", "dir", full, "err", err)
	}
	return true
}

// logParamsFor is what loadLog needs for one partition of a log dir.
func (m *Manager) logParamsFor(d *logDir, j partitionDir, clean bool, c dirCheckpoints) logParams {
	p := logParams{
		dir: j.dir, tp: j.tp, cfg: m.cfg.ConfigFor(j.tp.Topic), fsys: m.fsys,
		logger: m.logger, now: m.cfg.Now, bg: &m.bg, scheduleDelete: m.scheduleDelete,
		hadCleanShutdown: clean, recoveryPoint: 0, logStartOffset: -1, highWatermark: -1,
		pidExpirationMs: m.cfg.ProducerIDExpirationMs, health: &d.health,
	}
	if v, ok := c.recoveryPoints[j.tp]; ok {
		p.recoveryPoint = v
	}
	if v, ok := c.logStarts[j.tp]; ok {
		p.logStartOffset = v
	}
	if v, ok := c.highWatermarks[j.tp]; ok {
		p.highWatermark = v
	}
	return p
}

// addLoadedLogs adds a log dir's loaded logs to the manager. A log that
// failed to load puts the dir offline with that partition.
func (m *Manager) addLoadedLogs(d *logDir, res *DirLoadResult, jobs []partitionDir, logs []*Log, errs []error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var loadErr error
	for i, l := range logs {
		if errs[i] != nil {
			loadErr = errors.Join(loadErr, fmt.Errorf("loading %s: %w", jobs[i].dir, errs[i]))
			m.offline[jobs[i].tp] = d.path
			continue
		}
		if other, dup := m.logs[l.tp]; dup {
			loadErr = errors.Join(loadErr, fmt.Errorf("duplicate log directories for %s: %s and %s", l.tp, other.dir, l.dir))
			l.Close()
			continue
		}
		m.logs[l.tp] = l
		m.perDir[filepath.Dir(l.dir)]++
		res.Logs++
		res.RecoveredSegments += res.Results[i].RecoveredSegments
		res.TruncatedBytes += res.Results[i].TruncatedBytes
	}
	return loadErr
}

// listOffline records the partitions of a dir that failed to load as
// offline, so that they are not created anew in another dir; if the dir
// cannot even be listed, any partition may be there (unlisted).
func (m *Manager) listOffline(d *logDir) {
	entries, err := m.fsys.ReadDir(d.path)
	if err != nil {
		d.unlisted = true
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range entries {
		if tp, ok := parseTopicPartitionDir(e.Name()); ok && e.IsDir() {
			m.offline[tp] = d.path
		}
	}
}

// scheduleDelete runs fn once delay has passed on the injected clock.
func (m *Manager) scheduleDelete(delay time.Duration, fn func()) {
	if m.closing.Load() {
		fn()
		return
	}
	m.deletes.add(m.cfg.Now().Add(delay), fn)
}

// Start starts retention, flush and checkpoint goroutines. Idempotent.
func (m *Manager) Start() {
	m.mu.Lock()
	if m.started || m.closed {
		m.mu.Unlock()
		return
	}
	m.started = true
	m.mu.Unlock()
	m.bg.Every(m.cfg.RetentionCheckInterval, m.cleanupLogs)
	if m.cfg.FlushSchedulerInterval < math.MaxInt64 {
		m.bg.Every(m.cfg.FlushSchedulerInterval, m.flushDirtyLogs)
	}
	m.bg.Every(m.cfg.FlushOffsetCheckpointInterval, func() {
		m.checkpoints(RecoveryPointCheckpointFile, ReplicationCheckpointFile)
	})
	m.bg.Every(m.cfg.FlushStartOffsetCheckpointInterval, func() { m.checkpoints(LogStartOffsetCheckpointFile) })
	m.bg.Every(deleteCheckInterval, func() { m.deletes.runDue(m.cfg.Now(), false) })
	m.bg.Every(m.cfg.ProducerIDExpirationCheckInterval, m.removeExpiredProducers)
	if m.cfg.Scrub.Enable {
		m.bg.Go(m.scrubber.run)
	}
	if m.cleaner != nil {
		m.cleaner.startup()
	}
	m.resumeMoves()
}

// removeExpiredProducers applies producer.id.expiration.ms to every log
// (Kafka schedules PeriodicProducerExpirationCheck per log).
func (m *Manager) removeExpiredProducers() {
	for _, l := range m.Logs() {
		if n := l.RemoveExpiredProducers(); n > 0 {
			m.logger.Debug("expired producer ids", "partition", l.tp.String(), "producers", n)
		}
	}
}

// cleanupLogs applies retention to every log (Kafka's cleanupLogs).
func (m *Manager) cleanupLogs() {
	for _, l := range m.Logs() {
		if n, err := l.DeleteOldSegments(); err != nil {
			m.logger.Warn("retention failed", "partition", l.tp.String(), "err", err)
		} else if n > 0 {
			m.logger.Info("retention deleted segments", "partition", l.tp.String(), "segments", n, "log_start_offset", l.LogStartOffset())
		}
	}
}

// flushDirtyLogs flushes logs whose last flush is older than flush.ms.
func (m *Manager) flushDirtyLogs() {
	now := m.cfg.Now()
	for _, l := range m.Logs() {
		ms := l.Config().FlushIntervalMs
		if ms < math.MaxInt64 && l.timeSinceLastFlush(now) >= time.Duration(ms)*time.Millisecond {
			if err := l.Flush(); err != nil {
				m.logger.Warn("flush failed", "partition", l.tp.String(), "err", err)
			}
		}
	}
}

// CheckpointAll writes the recovery point, high watermark and log start
// checkpoints of every online dir.
func (m *Manager) CheckpointAll() error {
	return m.checkpoints(RecoveryPointCheckpointFile, ReplicationCheckpointFile, LogStartOffsetCheckpointFile)
}

// CheckpointLogStartOffsets writes the log start checkpoint of every
// online dir now, not at the next log.flush.start.offset.checkpoint.interval.ms:
// after a tiered log's start was set below its local start
// (RestoreRemoteLogAuxState), which a restart without it would forget,
// truncating the leader epochs below the local start.
func (m *Manager) CheckpointLogStartOffsets() error {
	return m.checkpoints(LogStartOffsetCheckpointFile)
}

func (m *Manager) checkpoints(files ...string) error {
	var errs []error
	for _, d := range m.dirs {
		if d.failed() != nil {
			continue
		}
		if err := m.checkpointDir(d, files...); err != nil {
			m.logger.Warn("writing checkpoints failed", "dir", d.path, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) logsIn(d *logDir) []*Log {
	var out []*Log
	for _, l := range m.Logs() {
		if filepath.Dir(l.Dir()) == d.path {
			out = append(out, l)
		}
	}
	return out
}

func (m *Manager) checkpointDir(d *logDir, files ...string) error {
	logs := m.logsIn(d)
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	for _, f := range files {
		offs := make(map[TopicPartition]int64, len(logs))
		for _, l := range logs {
			switch f {
			case RecoveryPointCheckpointFile:
				offs[l.tp] = l.RecoveryPoint()
			case ReplicationCheckpointFile:
				offs[l.tp] = l.HighWatermark()
			case LogStartOffsetCheckpointFile:
				offs[l.tp] = l.LogStartOffset()
			}
		}
		if err := WriteOffsetCheckpoint(m.fsys, filepath.Join(d.path, f), offs); err != nil {
			return err
		}
	}
	return nil
}

// Close stops background work, flushes, writes checkpoints and the clean
// shutdown marker (in each dir where all of that succeeded). Idempotent.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		if m.cleaner != nil {
			// First, as Kafka's LogManager.shutdown: no swap may run
			// while the logs close.
			m.cleaner.shutdown()
		}
		m.bg.StopAndWait()
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		// Moves in progress stop; their future dirs restart at the
		// next start-up.
		for _, l := range m.Logs() {
			l.closeFuture()
		}
		m.closing.Store(true)
		var errs []error
		for _, d := range m.dirs {
			if d.failed() != nil {
				// Normally closed already (handleLogDirFailure).
				for _, l := range m.logsIn(d) {
					l.Close()
				}
				continue
			}
			// Kafka's shutdown flushes and closes a dir's logs on
			// num.recovery.threads.per.data.dir threads.
			logs := m.logsIn(d)
			logErrs := make([]error, len(logs))
			inParallel(len(logs), m.cfg.RecoveryThreadsPerDataDir, func(i int) { logErrs[i] = logs[i].Flush() })
			dirErrs := []error{errors.Join(logErrs...)}
			dirErrs = append(dirErrs, m.checkpointDir(d, RecoveryPointCheckpointFile, ReplicationCheckpointFile, LogStartOffsetCheckpointFile))
			clear(logErrs)
			inParallel(len(logs), m.cfg.RecoveryThreadsPerDataDir, func(i int) { logErrs[i] = logs[i].Close() })
			dirErrs = append(dirErrs, errors.Join(logErrs...))
			ok := errors.Join(dirErrs...) == nil
			if !ok {
				errs = append(errs, dirErrs...)
			}
			if ok {
				if err := WriteFileAtomic(m.fsys, filepath.Join(d.path, CleanShutdownFile), cleanShutdownContent(m.brokerEpoch.Load())); err != nil {
					errs = append(errs, err)
				}
			}
		}
		m.deletes.runDue(time.Time{}, true)
		if m.metrics != nil {
			m.cfg.Registerer.Unregister(m.metrics)
		}
		if m.cleanerMetrics != nil {
			m.cfg.Registerer.Unregister(m.cleanerMetrics)
		}
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}

// GetLog returns the log of tp, or nil.
func (m *Manager) GetLog(tp TopicPartition) *Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.logs[tp]
}

// GetOrCreateLog returns the log of tp, creating it in the dir with the
// fewest partitions. An existing log with another (non-zero) topic ID is an
// error wrapping kerr.InconsistentTopicID; an existing log without one
// (its partition.metadata lost in a crash) gets topicID written now.
//
// Creating a log costs a few file creations and no fsync (see
// logParams.isNew) and is logged at DEBUG, so that a CreatePartitions of
// thousands of partitions takes well under a second per thousand; the
// caller logs a summary.
func (m *Manager) GetOrCreateLog(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("%w: log manager is closed", kerr.KafkaStorageError)
	}
	if l := m.logs[tp]; l != nil {
		have := l.TopicID()
		if topicID != ([16]byte{}) && have != ([16]byte{}) && have != topicID {
			return nil, fmt.Errorf("%w: log %s has topic id %s, not %s", kerr.InconsistentTopicID, tp, uuid.UUID(have).String(), uuid.UUID(topicID).String())
		}
		if have == ([16]byte{}) && topicID != ([16]byte{}) {
			m.adoptTopicID(l, topicID)
		}
		return l, nil
	}
	if err := validTopic(tp.Topic); err != nil {
		return nil, err
	}
	if tp.Partition < 0 {
		return nil, fmt.Errorf("%w: partition %d", kerr.InvalidPartitions, tp.Partition)
	}
	if err := m.offlineErr(tp); err != nil {
		return nil, err
	}
	var best *logDir
	for _, d := range m.dirs {
		if d.failed() == nil && (best == nil || m.perDir[d.path] < m.perDir[best.path]) {
			best = d
		}
	}
	if p, ok := m.preferred[tp]; ok {
		if d := m.logDirFor(p); d != nil && d.failed() == nil {
			best = d
		}
		delete(m.preferred, tp)
	}
	if best == nil {
		return nil, fmt.Errorf("%w: no online log dir", kerr.KafkaStorageError)
	}
	dir := filepath.Join(best.path, tp.String())
	_, statErr := m.fsys.Stat(dir)
	isNew := errors.Is(statErr, fs.ErrNotExist)
	l, _, err := loadLog(logParams{
		dir: dir, tp: tp, cfg: cfg, fsys: m.fsys,
		logger: m.logger, now: m.cfg.Now, bg: &m.bg, scheduleDelete: m.scheduleDelete,
		recoveryPoint: 0, logStartOffset: -1, highWatermark: -1, topicID: topicID,
		pidExpirationMs: m.cfg.ProducerIDExpirationMs,
		isNew:           isNew,
		health:          &best.health,
	})
	if err != nil {
		if isNew {
			// No half-made log is left to be found at start-up.
			_ = m.fsys.RemoveAll(dir)
		}
		return nil, fmt.Errorf("%w: creating log %s in %s: %w", kerr.KafkaStorageError, tp, best.path, err)
	}
	m.logs[tp] = l
	m.perDir[best.path]++
	m.logger.Debug("created log", "partition", tp.String(), "dir", l.dir)
	return l, nil
}

// adoptTopicID records topicID for a log loaded without one.
func (m *Manager) adoptTopicID(l *Log, topicID [16]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deleted || l.topicID != ([16]byte{}) {
		return
	}
	if err := writePartitionMetadata(m.fsys, l.Dir(), topicID); err != nil {
		m.logger.Warn("writing partition.metadata failed", "partition", l.tp.String(), "err", err)
		return
	}
	l.topicID = topicID
}

// DeleteLog removes tp's log: its dir is renamed
// "<topic>-<partition>.<uuid>-delete" at once, and closed and removed after
// file.delete.delay.ms (readers may still be sending from it).
func (m *Manager) DeleteLog(tp TopicPartition) error {
	return m.DeleteLogs([]TopicPartition{tp})
}

// DeleteLogs deletes logs as DeleteLog does, then syncs and writes the
// checkpoints of the dirs they were in once (Kafka's asyncDelete of a batch of
// partitions), so deleting a topic of thousands of partitions costs one
// checkpoint per dir, not one per partition. It returns every error met;
// the other logs are deleted regardless.
func (m *Manager) DeleteLogs(tps []TopicPartition) error {
	var errs []error
	dirs := make(map[string]bool)
	deleted := 0
	for _, tp := range tps {
		parent, err := m.deleteLog(tp)
		if err != nil {
			errs = append(errs, err)
		}
		if parent != "" {
			dirs[parent] = true
			deleted++
		}
	}
	for _, d := range m.dirs {
		if dirs[d.path] && d.failed() == nil {
			// The renames, durable before we return.
			if err := m.fsys.SyncDir(d.path); err != nil {
				errs = append(errs, fmt.Errorf("%w: syncing %s: %w", kerr.KafkaStorageError, d.path, err))
			}
			if err := m.checkpointDir(d, RecoveryPointCheckpointFile, ReplicationCheckpointFile, LogStartOffsetCheckpointFile); err != nil {
				m.logger.Warn("writing checkpoints failed", "dir", d.path, "err", err)
			}
		}
	}
	if deleted > 1 {
		m.logger.Info("deleted logs", "count", deleted)
	}
	return errors.Join(errs...)
}

// deleteLog renames tp's log for deletion and schedules its removal; it
// returns the log dir the log was in ("" if there was no log).
func (m *Manager) deleteLog(tp TopicPartition) (string, error) {
	m.mu.Lock()
	l := m.logs[tp]
	if dir, ok := m.offline[tp]; l == nil && ok {
		// Its dir is offline: the files stay there, and the next start
		// finds them a stray and deletes them.
		delete(m.offline, tp)
		m.mu.Unlock()
		m.logger.Info("forgot the log of a deleted partition in an offline log dir", "partition", tp.String(), "dir", dir)
		return "", nil
	}
	if l == nil {
		m.mu.Unlock()
		return "", fmt.Errorf("%w: no log for %s", kerr.UnknownTopicOrPartition, tp)
	}
	delete(m.logs, tp)
	old := l.Dir()
	parent := filepath.Dir(old)
	m.perDir[parent]--
	m.mu.Unlock()
	m.forgetCleaning(l)

	l.replaceMu.Lock()
	l.mu.Lock()
	m.dropFutureLocked(l, "log deleted")
	l.deleted = true
	var id [16]byte
	for i := range id {
		id[i] = byte(rand.Uint32())
	}
	newDir := fmt.Sprintf("%s.%x-delete", old, id)
	err := m.fsys.Rename(old, newDir)
	if err == nil {
		l.segMu.Lock()
		l.dir = newDir
		l.segMu.Unlock()
	}
	delay := time.Duration(l.cfg.FileDeleteDelayMs) * time.Millisecond
	l.mu.Unlock()
	l.replaceMu.Unlock()
	if err != nil {
		return parent, fmt.Errorf("%w: renaming %s for deletion: %w", kerr.KafkaStorageError, old, err)
	}
	m.scheduleDelete(delay, func() {
		l.Close()
		if err := m.fsys.RemoveAll(newDir); err != nil {
			m.logger.Warn("removing deleted log failed", "dir", newDir, "err", err)
		}
	})
	m.logger.Debug("deleted log", "partition", tp.String(), "dir", newDir)
	return parent, nil
}

// Logs returns every log, sorted by topic and partition.
func (m *Manager) Logs() []*Log {
	m.mu.RLock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].tp, out[j].tp
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}

// DirInfo describes one log dir for DescribeLogDirs.
type DirInfo struct {
	Path        string
	Err         error // non-nil for an offline dir
	TotalBytes  int64
	UsableBytes int64
	Partitions  []PartitionDirInfo
}

// PartitionDirInfo is one partition in a DirInfo.
type PartitionDirInfo struct {
	TopicPartition
	Size int64
	// IsFuture: the log being made here by a move from another dir
	// (AlterLogDir), OffsetLag behind the current log's end.
	IsFuture  bool
	OffsetLag int64
}

// DirInfos describes every log dir.
func (m *Manager) DirInfos() []DirInfo {
	var out []DirInfo
	for _, d := range m.dirs {
		di := DirInfo{Path: d.path, Err: d.failed(), TotalBytes: -1, UsableBytes: -1}
		if di.Err == nil {
			di.TotalBytes, di.UsableBytes = diskSpace(d.path)
			for _, l := range m.logsIn(d) {
				di.Partitions = append(di.Partitions, PartitionDirInfo{TopicPartition: l.tp, Size: l.Size()})
			}
			for _, l := range m.Logs() {
				if dir, size, lag, ok := l.FutureInfo(); ok && dir == d.path {
					di.Partitions = append(di.Partitions, PartitionDirInfo{TopicPartition: l.tp, Size: size, IsFuture: true, OffsetLag: lag})
				}
			}
		}
		out = append(out, di)
	}
	return out
}

// inParallel runs fn(0..n-1) on at most workers goroutines and waits.
func inParallel(n, workers int, fn func(i int)) {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}
