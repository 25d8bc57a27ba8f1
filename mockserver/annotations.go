package mockserver

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// Annotation routes (docs/api §27–§28), after Dify's service_api/app/
// annotation.py (AnnotationListApi, AnnotationUpdateDeleteApi,
// AnnotationReplyActionApi, AnnotationReplyActionStatusApi) and
// services/annotation_service.py (AppAnnotationService). No app-mode gate
// and no `user`: they run as the workspace owner.

var (
	errAnnotationNotFound = newError(http.StatusNotFound, "not_found", "Annotation not found")
	errJobNotFound        = invalidParam("The job does not exist.")
)

func annotationJSON(a store.Annotation) dify.Annotation {
	return dify.Annotation{ID: a.ID, Question: a.Question, Answer: a.Answer, HitCount: a.HitCount, CreatedAt: a.CreatedAt.Unix()}
}

// listAnnotations is GET /apps/annotations (docs/api §27.3). page and limit
// are read with request.args.get(type=int): a value that is not an integer
// falls back to the default. The service pages with Flask-SQLAlchemy's
// paginate(max_per_page=100, error_out=False): page < 1 reads page 1,
// limit < 1 reads 20 rows, limit > 100 reads 100. The answer echoes the
// requested page and limit and sets has_more = (rows == limit).
func (s *appServer) listAnnotations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	page := argInt(q.Get("page"), 1)
	limit := argInt(q.Get("limit"), 20)
	readPage, perPage := max(page, 1), limit
	switch {
	case perPage < 1:
		perPage = 20
	case perPage > 100:
		perPage = 100
	}
	rows, total := s.store.ListAnnotations(readPage, perPage, q.Get("keyword"))
	data := make([]dify.Annotation, len(rows))
	for i, a := range rows {
		data[i] = annotationJSON(a)
	}
	writeJSON(w, http.StatusOK, dify.AnnotationPage{Data: data, HasMore: len(data) == limit, Limit: limit, Total: total, Page: page})
}

// argInt is Werkzeug's MultiDict.get(key, default, type=int): int() of the
// value, or the default when it is absent or int() fails.
func argInt(v string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(v)) // int() allows surrounding whitespace
	if err != nil {
		return def
	}
	return n
}

// annotationCreatePayload is AnnotationCreatePayload
// (api/controllers/service_api/app/annotation.py): question and answer,
// required strings (empty allowed); other keys are ignored.
var annotationCreatePayload = pydantic.Model{Name: "AnnotationCreatePayload", Fields: []pydantic.Field{
	{Name: "question", Rule: pydantic.StrRule, Required: true},
	{Name: "answer", Rule: pydantic.StrRule, Required: true},
}}

// annotationPayload reads and validates AnnotationCreatePayload.
func annotationPayload(w http.ResponseWriter, r *http.Request) (question, answer string, e *apiError) {
	p, e := annotationBody(w, r, annotationCreatePayload)
	if e != nil {
		return "", "", e
	}
	return p.Str("question"), p.Str("answer"), nil
}

// createAnnotation is POST /apps/annotations (docs/api §27.4): 201.
func (s *appServer) createAnnotation(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	question, answer, e := annotationPayload(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	a, err := s.store.AddAnnotation(question, answer)
	if err != nil {
		writeError(w, errStateFull)
		return
	}
	writeJSON(w, http.StatusCreated, annotationJSON(a))
}

// updateAnnotation is PUT /apps/annotations/:annotation_id (docs/api §27.5):
// the body is validated before the annotation is looked up.
func (s *appServer) updateAnnotation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "annotation_id")
	if !ok {
		return
	}
	question, answer, e := annotationPayload(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	a, err := s.store.UpdateAnnotation(id, question, answer)
	switch {
	case errors.Is(err, store.ErrStateFull):
		writeError(w, errStateFull)
		return
	case err != nil:
		writeError(w, errAnnotationNotFound)
		return
	}
	writeJSON(w, http.StatusOK, annotationJSON(a))
}

// deleteAnnotation is DELETE /apps/annotations/:annotation_id (docs/api
// §27.6): 204 with no body.
func (s *appServer) deleteAnnotation(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "annotation_id")
	if !ok {
		return
	}
	if err := s.store.DeleteAnnotation(id); err != nil {
		writeError(w, errAnnotationNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// annotationReplyActionPayload is AnnotationReplyActionPayload
// (annotation.py): every field required.
var annotationReplyActionPayload = pydantic.Model{Name: "AnnotationReplyActionPayload", Fields: []pydantic.Field{
	{Name: "score_threshold", Rule: pydantic.FloatRule, Required: true},
	{Name: "embedding_provider_name", Rule: pydantic.StrRule, Required: true},
	{Name: "embedding_model_name", Rule: pydantic.StrRule, Required: true},
}}

// annotationReplyAction is POST /apps/annotation-reply/:action (docs/api
// §28.1): AnnotationReplyActionPayload is validated for both actions, then
// a job starts and is answered `waiting`. An action other than enable or
// disable leaves the handler's result unbound in the released controller
// (no else branch): Dify answers 500.
func (s *appServer) annotationReplyAction(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, e := annotationBody(w, r, annotationReplyActionPayload)
	if e != nil {
		writeError(w, e)
		return
	}
	setting := store.AnnotationSetting{ScoreThreshold: p.Float("score_threshold"),
		EmbeddingProviderName: p.Str("embedding_provider_name"), EmbeddingModelName: p.Str("embedding_model_name")}
	action := ps.ByName("action")
	if action != store.ActionEnable && action != store.ActionDisable {
		writeError(w, errInternal)
		return
	}
	job := s.store.StartAnnotationJob(action, setting, s.cfg.AnnotationJobDelay)
	// No error_msg key here (AppAnnotationService.enable/disable_app_annotation).
	writeJSON(w, http.StatusOK, struct {
		JobID     string `json:"job_id"`
		JobStatus string `json:"job_status"`
	}{job.ID, job.Status})
}

// annotationBody reads and validates the body as the annotation
// controllers do: model.model_validate(service_api_ns.payload or {}).
// Their validate_app_token reads no `user`, so a JSON value that is not an
// object reaches pydantic: a falsy one (null, [], "", 0, false) validates
// as {} (every field missing); any other is a model_type error.
func annotationBody(w http.ResponseWriter, r *http.Request, model pydantic.Model) (pydantic.Values, *apiError) {
	data, e := readJSONBytes(w, r)
	if e != nil {
		return nil, e
	}
	var dict *pydantic.Dict
	v := pydantic.Decode(data)
	switch _, ok := v.(map[string]any); {
	case ok:
		dict = pydantic.Body(data)
	case pydantic.Falsy(v):
		dict = pydantic.Body([]byte("{}"))
	default:
		return nil, pydanticError(model.Name, pydantic.Error{Msg: "Input should be a valid dictionary or instance of " + model.Name, Type: "model_type", Input: v})
	}
	p, errs := model.Validate(dict)
	if len(errs) > 0 {
		return nil, pydanticError(model.Name, errs...)
	}
	return p, nil
}

// annotationReplyStatus is GET /apps/annotation-reply/:action/status/:job_id
// (docs/api §28.2): the job's state under its action; an unknown, expired
// or other-action job is the controller's ValueError, 400 invalid_param.
func (s *appServer) annotationReplyStatus(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "job_id")
	if !ok {
		return
	}
	job, found := s.store.AnnotationJob(ps.ByName("action"), id)
	if !found {
		writeError(w, errJobNotFound)
		return
	}
	writeJSON(w, http.StatusOK, dify.AnnotationReplyJob{JobID: job.ID, JobStatus: job.Status, ErrorMsg: job.Error})
}
