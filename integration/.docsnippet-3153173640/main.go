// Create a video task with the Ark Go SDK, then poll it until it is finished.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

func main() {
	ctx := context.Background()
	client := arkruntime.NewClientWithApiKey("mg-demo-key",
		arkruntime.WithBaseUrl("http://127.0.0.1:37103/api/v3"))

	prompt := "a lighthouse at dawn"
	created, err := client.CreateContentGenerationTask(ctx, model.CreateContentGenerationTaskRequest{
		Model: "demo-seedance-1-0-pro",
		Content: []*model.CreateContentGenerationContentItem{
			{Type: model.ContentGenerationContentItemTypeText, Text: &prompt},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for {
		task, err := client.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: created.ID})
		if err != nil {
			log.Fatal(err)
		}
		switch task.Status {
		case model.StatusSucceeded:
			fmt.Println(task.Status, task.Content.VideoURL)
			return
		case model.StatusFailed, model.StatusCancelled, "expired":
			fmt.Println(task.Status, task.Error)
			return
		}
		time.Sleep(5 * time.Second) // queued or running
	}
}
