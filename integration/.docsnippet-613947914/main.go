// List the key's models and chat with openai-go.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func main() {
	ctx := context.Background()
	client := openai.NewClient(
		option.WithBaseURL("http://127.0.0.1:37103/v1/"),
		option.WithAPIKey("mg-demo-key"),
	)

	models := client.Models.ListAutoPaging(ctx)
	for models.Next() {
		fmt.Println(models.Current().ID)
	}
	if err := models.Err(); err != nil {
		log.Fatal(err)
	}

	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "demo-chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(chat.Choices[0].Message.Content)
}
