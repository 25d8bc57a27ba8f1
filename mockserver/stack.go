package mockserver

// The stack budget of a chat stream.
//
// With a Listener (chat_detach.go: `dify-mock serve`, mocktest) a stream
// leaves its connection goroutine once the header is out and plays on a
// goroutine of its own that starts small and ends with the stream, so the
// budget below is for streams on a connection goroutine: a Server served
// without its Listener (httptest.NewServer(srv)), HTTP/1.0, or a writer
// that cannot be hijacked. The rules still hold on the detached path up to
// the header, and cost nothing there.
//
// The rule: a chat's connection goroutine never needs more than the 8 KiB
// stack Go starts it with. A stream lives for as long as the recorded turn
// lasts (seconds to minutes), and a goroutine keeps the largest stack it
// ever needed until the garbage collector shrinks it, which it does not do
// while the goroutine is blocked in a deep call; so one deep moment anywhere
// in a chat doubles its stack to 16 KiB for the whole stream. At 10,000
// concurrent streams that is 80 MB, the largest single item of a stream's
// memory (bench/README.md).
//
// The numbers: Go starts a goroutine with 8 KiB and doubles it when a call
// would overflow; net/http writes a response header in a function with a
// 2.8 KiB frame, and decoding the request JSON and storing a turn reach
// about as deep, each on top of the 5-6 KiB the connection's handler chain
// already uses (net/http, the middleware, the router, the handler).
// TestStreamKeepsASmallStack measures about 8.3 KiB per idle connection
// (the goroutine's stack plus its share of bookkeeping).
//
// How the chat path keeps to it:
//
//   - the deep moments run on another goroutine, one of a few workers that
//     keep their grown stacks for the next call (freshstack.Run,
//     internal/freshstack): parseChat (chat_parse.go), the player's first
//     flush or first large write (flushSink, chat_stream.go) and storeTurn
//     (the player's settle callback);
//   - the phases are called one after the other from chatMessages, never
//     nested: prepareChat (parse checks, steer, admit) returns its
//     chatStream before playChat starts, so its frames are not below the
//     player's; chatStream and turnPlan are pointers for the same reason;
//   - routeFault is //go:noinline so that its locals stay out of the frames
//     of the handlers that call it.
//
// The exception: a turn hybrid mode answers live from the upstream
// (chat_upstream.go) streams from inside steer, below the recorder's read
// loop, and may take a 16 KiB stack. Such turns are a developer's new
// questions, a handful at a time, not the thousands of replays the budget
// is for; storing them still runs on a fresh stack.
//
// The guard: TestStreamKeepsASmallStack (stack_test.go) runs 200 chats on
// keep-alive connections with the collector off and fails when the idle
// connections' goroutines average more than 12 KiB of stack. Any change to
// the chat path that adds a deep call or a large frame shows there first.
