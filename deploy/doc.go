// Package deploy holds no code: its folder has the container image
// (Dockerfile) and the Helm chart (helm/zonos-stream) that run the speech
// service on Kubernetes, one pod per GPU, and its tests render the chart
// and check every manifest against the Kubernetes API types (see
// docs/deploy.md).
package deploy
