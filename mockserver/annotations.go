package mockserver

import (
	"encoding/json"
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
	body, e := readJSON(w, r, false)
	if e != nil {
		return "", "", e
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"question", &question}, {"answer", &answer}} {
		v, present, e := body.str(f.name)
		if e != nil {
			return "", "", e
		}
		if !present {
			return "", "", invalidParam(f.name + ": Field required")
		}
		*f.dst = v
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
	writeJSON(w, http.StatusCreated, annotationJSON(s.store.AddAnnotation(question, answer)))
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
	if err != nil {
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
	body, e := readJSON(w, r, false)
	if e != nil {
		writeError(w, e)
		return
	}
	var setting store.AnnotationSetting
	raw, present := body["score_threshold"]
	if !present {
		writeError(w, invalidParam("score_threshold: Field required"))
		return
	}
	if setting.ScoreThreshold, e = laxFloat("score_threshold", raw); e != nil {
		writeError(w, e)
		return
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"embedding_provider_name", &setting.EmbeddingProviderName}, {"embedding_model_name", &setting.EmbeddingModelName}} {
		v, present, e := body.str(f.name)
		if e != nil {
			writeError(w, e)
			return
		}
		if !present {
			writeError(w, invalidParam(f.name+": Field required"))
			return
		}
		*f.dst = v
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

// laxFloat reads a pydantic float in lax mode: a JSON number or a numeric
// string; null, booleans and other values fail.
func laxFloat(field string, raw json.RawMessage) (float64, *apiError) {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(str), 64); err == nil {
			return f, nil
		}
		return 0, invalidParam(field + ": Input should be a valid number, unable to parse string as a number")
	}
	return 0, invalidParam(field + ": Input should be a valid number")
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
