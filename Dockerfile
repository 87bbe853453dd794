# The Railyard image for people who build with Docker or Buildah:
#
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     -t ghcr.io/railyard-io/railyard:0.1.0 .
#
# It holds the same static binaries at the same paths, with the same labels,
# default user and command, as `make images` (hack/image, internal/image),
# which needs no Docker daemon, pulls no base image and gives the same digest
# for the same commit. This file pulls golang from Docker Hub; it is not
# built by the project's tests (there is no Docker daemon on the build
# machine), but internal/image's TestDockerfileMatchesImageBuilder checks
# that its flags, binaries and labels match.
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG VERSION=dev
ARG REVISION=unknown
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} GOFLAGS= GOAMD64=v1 GOARM64=v8.0 \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -buildid= -X github.com/railyard-io/railyard/internal/version.version=${VERSION} -X github.com/railyard-io/railyard/internal/version.revision=${REVISION}" \
      -o /out/ ./cmd/railyard-agent ./cmd/railyard-cni ./cmd/railyard-cni-install ./cmd/railyard

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.source="https://github.com/railyard-io/railyard" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.title="railyard"
COPY --from=build /out/ /usr/local/bin/
ENV PATH=/usr/local/bin
USER 65532:65532
WORKDIR /
CMD ["/usr/local/bin/railyard-agent"]
