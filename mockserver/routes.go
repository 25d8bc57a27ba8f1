package mockserver

// The route table: every handler of an app, each behind the layers its
// route needs. It names handlers from every file, so it sits above them
// all; the files it names never need it.

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// routes is an app's handler: its router behind the front layer
// (middleware.go: the access line, CORS, the body's read deadline).
func (s *appServer) routes() http.Handler {
	r := httprouter.New()
	r.RedirectFixedPath = false
	// Werkzeug's rules are strict about a trailing slash: /v1/info/ is a
	// 404, not a redirect (the one redirect, /v1 → /v1/, is in notFound).
	r.RedirectTrailingSlash = false
	r.HandleMethodNotAllowed = true
	r.HandleOPTIONS = true
	r.NotFound = http.HandlerFunc(notFound)
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeError(w, errMethodNotAllowed) })
	r.GlobalOPTIONS = http.HandlerFunc(s.preflight)

	r.GET("/v1/", s.withFaults(s.serverInfo())) // no auth (docs/api §1.1)
	a := func(h httprouter.Handle) httprouter.Handle { return s.authenticate(s.withFaults(h)) }
	r.POST("/v1/chat-messages", s.authenticate(s.chatMessages))
	r.POST("/v1/chat-messages/:task_id/stop", a(s.stopChat))
	r.GET("/v1/messages/:message_id/suggested", a(s.suggested))
	r.GET("/v1/messages", a(s.listMessages))
	r.GET("/v1/conversations", a(s.listConversations))
	r.POST("/v1/conversations/:conversation_id/name", a(s.renameConversation))
	r.DELETE("/v1/conversations/:conversation_id", a(s.deleteConversation))
	r.POST("/v1/files/upload", a(s.uploadFile))
	r.GET("/v1/end-users/:end_user_id", a(s.endUser))
	r.POST("/v1/audio-to-text", a(s.audioToText))
	r.POST("/v1/text-to-audio", a(s.textToAudio))
	r.GET("/v1/info", a(s.appResponse("/info")))
	r.GET("/v1/parameters", a(s.appResponse("/parameters")))
	r.GET("/v1/meta", a(s.appResponse("/meta")))
	r.GET("/v1/site", a(s.appResponse("/site")))
	r.POST("/v1/messages/:message_id/feedbacks", a(s.messageFeedback))
	r.GET("/v1/app/feedbacks", a(s.appFeedbacks))
	r.GET("/v1/apps/annotations", a(s.listAnnotations))
	r.POST("/v1/apps/annotations", a(s.createAnnotation))
	r.PUT("/v1/apps/annotations/:annotation_id", a(s.updateAnnotation))
	r.DELETE("/v1/apps/annotations/:annotation_id", a(s.deleteAnnotation))
	r.POST("/v1/apps/annotation-reply/:action", a(s.annotationReplyAction))
	r.GET("/v1/apps/annotation-reply/:action/status/:job_id", a(s.annotationReplyStatus))
	r.GET("/v1/files/:file_id/preview", a(s.previewFile))
	r.GET("/files/:file_id/:action", s.withFaults(s.signedFile)) // no API key: signed (signed_files.go)
	r.GET("/v1/conversations/:conversation_id/variables", a(s.listConversationVariables))
	r.PUT("/v1/conversations/:conversation_id/variables/:variable_id", a(s.updateConversationVariable))

	return s.front(r)
}
