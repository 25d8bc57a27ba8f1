package mocktest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/mocktest"
)

// In a test, mocktest.Start(t) does the same and stops the mock with
// t.Cleanup; New and Close are for a TestMain or a program.
func ExampleNew() {
	mock, err := mocktest.New(mocktest.WithSpeed(0)) // built-in cassettes, no delays
	if err != nil {
		log.Fatal(err)
	}
	defer mock.Close()

	client, err := dify.NewClient(mock.BaseURL, "app-example", dify.WithUser("example-user"))
	if err != nil {
		log.Fatal(err)
	}
	stream, err := client.SendChatMessage(context.Background(), dify.ChatRequest{Query: "Hello"})
	if err != nil {
		log.Fatal(err)
	}
	turn, err := dify.Collect(stream)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cassette:", stream.Header().Get("X-Dify-Mock-Cassette"))
	fmt.Println("completed:", turn.Completed)
	fmt.Println("answer:", turn.Answer)
	// Output:
	// cassette: plain-answer
	// completed: true
	// answer: Hello! I'm the Travel Helper. Tell me where you'd like to go and when, and I'll look up options, check prices and put a plan together for you.
}
