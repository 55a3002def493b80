# Build: compile TypeScript with the dev dependencies.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --no-audit --no-fund

# Run: production dependencies and the compiled code only.
FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000 3001 2525
CMD ["node", "dist/main.js"]
