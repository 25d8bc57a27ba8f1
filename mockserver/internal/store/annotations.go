package store

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/similar"
)

// ErrAnnotationNotFound is an annotation id the app does not have.
var ErrAnnotationNotFound = errors.New("annotation not found")

// Annotation is a question/answer pair of the app (Dify's MessageAnnotation,
// docs/api §27.2).
type Annotation struct {
	ID        string
	Question  string
	Answer    string
	HitCount  int
	CreatedAt time.Time
	vec       similar.Vector // Question, normalised (read-only once set)
}

// AnnotationSetting is the app's annotation-reply setting (Dify's
// AppAnnotationSetting, docs/api §28.3): present while reply is enabled.
type AnnotationSetting struct {
	ScoreThreshold        float64 `json:"score_threshold"`
	EmbeddingProviderName string  `json:"embedding_provider_name"`
	EmbeddingModelName    string  `json:"embedding_model_name"`
}

// Annotation reply job states and actions (docs/api §28).
const (
	JobWaiting   = "waiting"
	JobCompleted = "completed"
	JobError     = "error"

	ActionEnable  = "enable"
	ActionDisable = "disable"
)

// JobRetention is how long a finished job stays readable: Dify writes the
// final status with SETEX 600 (docs/api §28.3).
const JobRetention = 10 * time.Minute

// AnnotationJob is an annotation-reply enable/disable job (docs/api §28).
type AnnotationJob struct {
	ID     string
	Action string
	Status string
	Error  string
	// ReadyAt is when the simulated worker runs the job; FinishedAt when it
	// did (zero while waiting).
	ReadyAt    time.Time
	FinishedAt time.Time
	setting    AnnotationSetting
}

// annotationState is the app's annotations and annotation-reply state.
type annotationState struct {
	rows    []*Annotation // creation order
	setting *AnnotationSetting
	jobs    []*AnnotationJob // creation order, so due jobs run in order
	// bytes is the rows' estimated size, part of the store's account
	// (bound.go).
	bytes int64
	// gen names this version of rows: every change takes a new one from
	// annotationGens, so an index built for another version (or for the
	// state a snapshot import replaced) is never mistaken for this one.
	gen uint64
}

var annotationGens atomic.Uint64

// changed marks rows as changed (s.mu held, or a store not yet shared).
func (a *annotationState) changed() { a.gen = annotationGens.Add(1) }

// annotationMatcher holds the index MatchAnnotation reads: built from the
// rows when they changed since the last build, outside the store's lock,
// and then read without any lock, so matching a long query against many
// annotations never holds up other requests.
type annotationMatcher struct {
	build sync.Mutex // one build at a time; others wait for it, not for s.mu
	cur   atomic.Pointer[annotationIndex]
}

type annotationIndex struct {
	gen uint64
	ix  *similar.Index
	ids []string // document number → annotation id
}

// AddAnnotation creates an annotation with hit_count 0 (docs/api §27.4).
// It fails with ErrStateFull when the annotations would pass the state
// bound (bound.go).
func (s *Store) AddAnnotation(question, answer string) (Annotation, error) {
	vec := similar.Parse(question) // before the lock: a question may be long
	s.mu.Lock()
	defer s.mu.Unlock()
	n := annotationSize(question, answer)
	if !s.fitAnnotations(n) {
		return Annotation{}, ErrStateFull
	}
	a := &Annotation{ID: s.newID(), Question: question, Answer: answer, CreatedAt: s.now(), vec: vec}
	s.ann.rows = append(s.ann.rows, a)
	s.ann.changed()
	s.chargeAnnotations(n)
	return *a, nil
}

func (s *Store) annotation(id string) (int, *Annotation) {
	for i, a := range s.ann.rows {
		if a.ID == id {
			return i, a
		}
	}
	return -1, nil
}

// UpdateAnnotation replaces question and answer; hit count and creation
// time are kept (docs/api §27.5).
func (s *Store) UpdateAnnotation(id, question, answer string) (Annotation, error) {
	vec := similar.Parse(question)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, a := s.annotation(id)
	if a == nil {
		return Annotation{}, ErrAnnotationNotFound
	}
	delta := annotationSize(question, answer) - annotationSize(a.Question, a.Answer)
	if !s.fitAnnotations(delta) {
		return Annotation{}, ErrStateFull
	}
	a.Question, a.Answer, a.vec = question, answer, vec
	s.ann.changed()
	s.chargeAnnotations(delta)
	return *a, nil
}

// DeleteAnnotation removes an annotation and its hit history (docs/api §27.6).
func (s *Store) DeleteAnnotation(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, a := s.annotation(id)
	if i < 0 {
		return ErrAnnotationNotFound
	}
	s.ann.rows = append(s.ann.rows[:i], s.ann.rows[i+1:]...)
	s.ann.changed()
	s.chargeAnnotations(-annotationSize(a.Question, a.Answer))
	return nil
}

// ListAnnotations pages the annotations newest first (created_at DESC, id
// DESC), keeping those whose question or answer contains keyword
// case-insensitively (ILIKE '%kw%', docs/api §27.3). page and perPage must be
// at least 1. total counts every match.
func (s *Store) ListAnnotations(page, perPage int, keyword string) (rows []Annotation, total int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	kw := strings.ToLower(keyword)
	var matches []*Annotation
	for i := len(s.ann.rows) - 1; i >= 0; i-- {
		a := s.ann.rows[i]
		if kw == "" || strings.Contains(strings.ToLower(a.Question), kw) || strings.Contains(strings.ToLower(a.Answer), kw) {
			matches = append(matches, a)
		}
	}
	rows = []Annotation{}
	if page-1 > len(matches)/perPage {
		return rows, len(matches)
	}
	for _, a := range matches[min((page-1)*perPage, len(matches)):min((page-1)*perPage+perPage, len(matches))] {
		rows = append(rows, *a)
	}
	return rows, len(matches)
}

// StartAnnotationJob queues an enable or disable job that the simulated
// worker runs at now+delay (docs/api §28.1). It is returned waiting.
func (s *Store) StartAnnotationJob(action string, setting AnnotationSetting, delay time.Duration) AnnotationJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleJobs()
	j := &AnnotationJob{ID: s.newID(), Action: action, Status: JobWaiting, ReadyAt: s.now().Add(delay), setting: setting}
	s.ann.jobs = append(s.ann.jobs, j)
	return *j
}

// AnnotationJob reads a job of action (docs/api §28.2). Unknown ids, another
// action's job and jobs finished more than JobRetention ago are not found.
func (s *Store) AnnotationJob(action, id string) (AnnotationJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleJobs()
	for _, j := range s.ann.jobs {
		if j.ID == id && j.Action == action {
			return *j, true
		}
	}
	return AnnotationJob{}, false
}

// AnnotationReplySetting returns the setting while annotation reply is
// enabled (after an enable job completed, until a disable job completes).
func (s *Store) AnnotationReplySetting() (AnnotationSetting, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleJobs()
	if s.ann.setting == nil {
		return AnnotationSetting{}, false
	}
	return *s.ann.setting, true
}

// errMissingEmbeddingModel is the mock's failure for an enable job that
// would have to embed questions without a model name: Dify's worker then
// fails in the embedding provider, whose message the mock cannot know.
const errMissingEmbeddingModel = "dify-mock: embedding_provider_name and embedding_model_name must not be empty to index the annotations"

// settleJobs runs the jobs that are due, in creation order, as Dify's
// enable/disable_annotation_reply_task would (docs/api §28.3), and forgets
// jobs finished more than JobRetention ago. Callers hold s.mu.
func (s *Store) settleJobs() {
	now := s.now()
	kept := s.ann.jobs[:0]
	for _, j := range s.ann.jobs {
		if j.Status == JobWaiting && !now.Before(j.ReadyAt) {
			s.runJob(j, now)
		}
		if j.Status != JobWaiting && now.Sub(j.FinishedAt) > JobRetention {
			continue
		}
		kept = append(kept, j)
	}
	clear(s.ann.jobs[len(kept):])
	s.ann.jobs = kept
}

func (s *Store) runJob(j *AnnotationJob, now time.Time) {
	j.FinishedAt = now
	switch j.Action {
	case ActionEnable:
		// Only annotations that exist need embedding: with none, Dify's
		// task makes no embedding call and any model name completes.
		if len(s.ann.rows) > 0 && (strings.TrimSpace(j.setting.EmbeddingProviderName) == "" || strings.TrimSpace(j.setting.EmbeddingModelName) == "") {
			j.Status, j.Error = JobError, errMissingEmbeddingModel
			return
		}
		setting := j.setting
		s.ann.setting = &setting
	case ActionDisable:
		// The newest task completes an already-disabled app too.
		s.ann.setting = nil
	}
	j.Status = JobCompleted
}

// MatchAnnotation finds the annotation that answers query while reply is
// enabled, as AnnotationReplyFeature.query does with top_k 1 (docs/api
// §29.1): the similarity of query and question (package similar) must
// reach the threshold (a stored 0 means 1); the best score wins, the newest
// annotation on a tie. A hit increments hit_count. ok is false when reply is
// disabled or nothing matches.
//
// The store's lock is held only to read the setting and to count the hit:
// the query is normalised and scored against a prebuilt index without it,
// so its cost (bounded by similar.MaxWords) delays no other request.
func (s *Store) MatchAnnotation(query string) (a Annotation, score float64, ok bool) {
	// Every chat asks, and annotation reply is off in most runs: a shared
	// lock answers that without queueing chats behind each other on the
	// store's write lock (settling jobs needs it).
	s.mu.RLock()
	idle := s.ann.setting == nil && len(s.ann.jobs) == 0
	s.mu.RUnlock()
	if idle {
		return Annotation{}, 0, false
	}
	s.mu.Lock()
	s.settleJobs()
	setting, gen := s.ann.setting, s.ann.gen
	var threshold float64
	if setting != nil {
		threshold = setting.ScoreThreshold
	}
	s.mu.Unlock()
	if setting == nil {
		return Annotation{}, 0, false
	}
	if threshold == 0 {
		threshold = 1
	}
	q := similar.Parse(query)
	idx := s.annotationIndex(gen)
	doc, score, ok := idx.ix.Best(q, threshold)
	if !ok {
		return Annotation{}, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, row := s.annotation(idx.ids[doc])
	if row == nil { // deleted meanwhile
		return Annotation{}, 0, false
	}
	row.HitCount++
	return *row, score, true
}

// annotationIndex returns an index of the rows at least as new as gen,
// building one when the current one is older. The rows are copied under a
// read lock (pointers and precomputed vectors, no text is parsed) and
// indexed after it is released.
func (s *Store) annotationIndex(gen uint64) *annotationIndex {
	m := &s.annIndex
	if cur := m.cur.Load(); cur != nil && cur.gen == gen {
		return cur
	}
	m.build.Lock()
	defer m.build.Unlock()
	if cur := m.cur.Load(); cur != nil && cur.gen == gen {
		return cur // built while this request waited
	}
	s.mu.RLock()
	built := &annotationIndex{gen: s.ann.gen, ids: make([]string, len(s.ann.rows))}
	vecs := make([]similar.Vector, len(s.ann.rows))
	for i, a := range s.ann.rows {
		built.ids[i], vecs[i] = a.ID, a.vec
	}
	s.mu.RUnlock()
	built.ix = similar.NewIndex(vecs) // creation order: a tie goes to the newest
	m.cur.Store(built)
	return built
}
