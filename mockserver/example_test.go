package mockserver_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// Wiring the server up yourself (docs/mock/running.md, "In Go tests"):
// Listener is optional and takes chat streams off net/http's connection
// goroutines, as `dify-mock serve` runs them.
func ExampleServer_Listener() {
	srv, err := mockserver.New(mockserver.Config{Speed: 0}) // built-in cassettes, no delays
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener = srv.Listener(ts.Listener)
	ts.Start()
	defer ts.Close()
	client, _ := dify.NewClient(ts.URL+"/v1", "app-test", dify.WithUser("example-user"))

	stream, err := client.SendChatMessage(context.Background(), dify.ChatRequest{Query: "Hello"})
	if err != nil {
		log.Fatal(err)
	}
	turn, err := dify.Collect(stream)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("completed:", turn.Completed)
	// Output:
	// completed: true
}
