package mockserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/store"
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
func (s *Server) listAnnotations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
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

// annotationPayload validates AnnotationCreatePayload: question and answer
// required strings (empty allowed), other keys ignored.
func annotationPayload(w http.ResponseWriter, r *http.Request) (question, answer string, e *apiError) {
	dict, e := annotationBody(w, r, "AnnotationCreatePayload")
	if e != nil {
		return "", "", e
	}
	var errs []pyErr
	for _, f := range []struct {
		name string
		dst  *string
	}{{"question", &question}, {"answer", &answer}} {
		v, present := dict.vals[f.name]
		if !present {
			errs = append(errs, pyErr{loc: f.name, msg: "Field required", typ: "missing", input: dict})
			continue
		}
		str, pe := pyStrField(f.name, v)
		if pe != nil {
			errs = append(errs, *pe)
		}
		*f.dst = str
	}
	if len(errs) > 0 {
		return "", "", pydanticError("AnnotationCreatePayload", errs...)
	}
	return question, answer, nil
}

// createAnnotation is POST /apps/annotations (docs/api §27.4): 201.
func (s *Server) createAnnotation(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
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
func (s *Server) updateAnnotation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
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
func (s *Server) deleteAnnotation(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
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

// annotationReplyAction is POST /apps/annotation-reply/:action (docs/api
// §28.1): AnnotationReplyActionPayload is validated for both actions, then
// a job starts and is answered `waiting`. An action other than enable or
// disable leaves the handler's result unbound in the released controller
// (no else branch): Dify answers 500.
func (s *Server) annotationReplyAction(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	dict, e := annotationBody(w, r, "AnnotationReplyActionPayload")
	if e != nil {
		writeError(w, e)
		return
	}
	var (
		setting store.AnnotationSetting
		errs    []pyErr
	)
	if v, present := dict.vals["score_threshold"]; !present {
		errs = append(errs, pyErr{loc: "score_threshold", msg: "Field required", typ: "missing", input: dict})
	} else {
		f, pe := pyFloatField("score_threshold", v)
		if pe != nil {
			errs = append(errs, *pe)
		}
		setting.ScoreThreshold = f
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"embedding_provider_name", &setting.EmbeddingProviderName}, {"embedding_model_name", &setting.EmbeddingModelName}} {
		v, present := dict.vals[f.name]
		if !present {
			errs = append(errs, pyErr{loc: f.name, msg: "Field required", typ: "missing", input: dict})
			continue
		}
		str, pe := pyStrField(f.name, v)
		if pe != nil {
			errs = append(errs, *pe)
		}
		*f.dst = str
	}
	if len(errs) > 0 {
		writeError(w, pydanticError("AnnotationReplyActionPayload", errs...))
		return
	}
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

// annotationBody reads the body as the annotation controllers do:
// Model.model_validate(service_api_ns.payload or {}). Their
// validate_app_token reads no `user`, so a JSON value that is not an
// object reaches pydantic: a falsy one (null, [], "", 0, false) validates
// as {} (every field missing); any other is a model_type error.
func annotationBody(w http.ResponseWriter, r *http.Request, model string) (*orderedDict, *apiError) {
	data, e := readJSONBytes(w, r)
	if e != nil {
		return nil, e
	}
	v := decodeJSONValue(data)
	if _, ok := v.(map[string]any); ok {
		return orderedBody(data), nil
	}
	if pyFalsy(v) {
		return orderedBody([]byte("{}")), nil
	}
	return nil, pydanticError(model, pyErr{msg: "Input should be a valid dictionary or instance of " + model, typ: "model_type", input: v})
}

// pyFloatField validates a `float` field in pydantic's lax mode: a JSON
// number, a bool (as 1.0/0.0), or a string that parses as a float
// (surrounding whitespace, inf and nan allowed).
func pyFloatField(loc string, v any) (float64, *pyErr) {
	switch t := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err == nil || errors.Is(err, strconv.ErrRange) {
			return f, nil // Python floats overflow to inf
		}
	case bool:
		if t {
			return 1, nil
		}
		return 0, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil {
			return f, nil
		}
		return 0, &pyErr{loc: loc, msg: "Input should be a valid number, unable to parse string as a number", typ: "float_parsing", input: v}
	}
	return 0, &pyErr{loc: loc, msg: "Input should be a valid number", typ: "float_type", input: v}
}

// annotationReplyStatus is GET /apps/annotation-reply/:action/status/:job_id
// (docs/api §28.2): the job's state under its action; an unknown, expired
// or other-action job is the controller's ValueError, 400 invalid_param.
func (s *Server) annotationReplyStatus(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
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
