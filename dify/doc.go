// Package dify is a Go client for the Dify Agent app Service API: the
// "New Agent" (app mode `agent`) and the legacy Agent (`agent-chat`). It
// holds the wire types, a Client with one method per operation, the
// server-sent-events reader for chat replies and an accumulator that folds a
// reply into its final answer. Section references such as "docs/api §2.5" point
// to the project's API reference, docs/api/README.md.
//
// # Client
//
// A Client is bound to one app by its API key:
//
//	c, err := dify.NewClient("https://api.dify.ai/v1", apiKey, dify.WithUser("user-123"))
//	info, err := c.AppInfo(ctx)
//
// Every call takes a context. The default user fills in every call whose
// own user is empty. Errors from Dify are *APIError values carrying the
// HTTP status, Dify's code and message (see IsNotFound, IsUnauthorized,
// IsRateLimited, AsAPIError); their text never contains the API key.
//
// Idempotent calls are retried on 429, 5xx (except 501) and connection
// failures with capped exponential backoff, full jitter and Retry-After
// (see RetryPolicy, WithLogger). Calls that create something — sending a
// chat message, uploading a file — are only retried when the request
// provably never left the machine, so a message is never sent twice.
//
// # Paging
//
// Each listing pages its own way (a last_id or first_id cursor, page
// numbers without has_more, page numbers with an unreliable has_more).
// ConversationPages, MessagePages, AppFeedbackPages and AnnotationPages
// walk them as iterators, each rule written once next to its List call:
//
//	p := dify.ListConversationsParams{User: "user-123", Limit: 100}
//	for page, err := range dify.ConversationPages(ctx, c, &p, 0) {
//		if err != nil {
//			return err
//		}
//		for _, conv := range page.Data { … }
//	}
//
// # Chat
//
// SendChatMessage always streams (agent apps support nothing else). Read the
// events one by one, or fold them with Collect:
//
//	stream, err := c.SendChatMessage(ctx, dify.ChatRequest{Query: "Hello"})
//	if err != nil { ... }             // *APIError before the stream started
//	turn, err := dify.Collect(stream) // closes the stream
//	fmt.Println(turn.ConversationID, turn.Answer)
//	for _, t := range turn.Thoughts { ... }
//
// ChatStream.Next yields typed events (*AgentMessageEvent,
// *AgentThoughtEvent, *MessageEndEvent, ...; *UnknownEvent for anything
// newer). A stream that ends before message_end reports ErrTruncatedStream.
// An in-stream `error` event arrives as *ErrorEvent; Accumulator and
// Collect turn it into an *APIError with Stream set.
//
// # Feedback, annotations, files, variables
//
// SendFeedback and ListAppFeedbacks rate answers and list ratings (docs/api
// §25–§26). CreateAnnotation, ListAnnotations, UpdateAnnotation and
// DeleteAnnotation manage annotations (docs/api §27); StartAnnotationReply and
// WaitAnnotationReply switch annotation reply on or off through Dify's
// asynchronous job (docs/api §28), and MessageEndMetadata.Annotation tells
// whether an annotation answered a turn (docs/api §29). PreviewFile downloads an
// uploaded file a turn used (docs/api §30). ListConversationVariables and
// UpdateConversationVariable serve `agent-chat` apps only (docs/api §31).
//
// FrameReader and DecodeEvent are the lower layer, for tools that need the
// raw frames (recorders, linters): the Raw bytes of all frames concatenate
// back to the exact input.
package dify
