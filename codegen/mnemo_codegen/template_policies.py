"""The IAM statements a function gets for a tool's ``Rights``: nothing it does not declare.

The records table (reads, puts, deletes), the bucket's objects by place, the extraction model (with an
inference profile's cross-region routing), Titan, the vector index (the collection, or an existing
domain's HTTP methods) and the extraction queue, in the order template.yaml lists them
(``mnemo_codegen.template_gen``).
"""

from __future__ import annotations

from mnemo.tools.rights import S3_ACTIONS, Rights

TABLE = "!Sub arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/mnemo-records-${Stage}"
RECORDS_ACTIONS = {
    "read": ("RecordsRead", "[dynamodb:GetItem, dynamodb:BatchGetItem, dynamodb:Query]"),
    "read-put": ("RecordsReadPut", "[dynamodb:GetItem, dynamodb:BatchGetItem, dynamodb:Query, dynamodb:PutItem]"),
    "read-write": (
        "RecordsReadWrite",
        "[dynamodb:GetItem, dynamodb:BatchGetItem, dynamodb:Query, dynamodb:PutItem, dynamodb:DeleteItem]",
    ),
}
INDEX_ACTIONS = {
    "read": ("VectorIndexRead", "[es:ESHttpGet, es:ESHttpHead, es:ESHttpPost]"),
    "delete": ("VectorIndexDelete", "[es:ESHttpGet, es:ESHttpHead, es:ESHttpPost, es:ESHttpDelete]"),
    "write": ("VectorIndexReadWrite", "[es:ESHttpGet, es:ESHttpHead, es:ESHttpPost, es:ESHttpPut, es:ESHttpDelete]"),
}
#: The same rights on the S3 vector bucket (VectorStore s3vectors). QueryVectors with a filter or metadata also
#: needs GetVectors (AWS's QueryVectors reference); a writer creates a namespace's index on its first write.
S3VECTORS_ACTIONS = {
    "read": "[s3vectors:GetIndex, s3vectors:QueryVectors, s3vectors:GetVectors, s3vectors:ListVectors]",
    "delete": (
        "[s3vectors:GetIndex, s3vectors:QueryVectors, s3vectors:GetVectors, s3vectors:ListVectors, "
        "s3vectors:DeleteVectors]"
    ),
    "write": (
        "[s3vectors:GetIndex, s3vectors:QueryVectors, s3vectors:GetVectors, s3vectors:ListVectors, "
        "s3vectors:DeleteVectors, s3vectors:PutVectors, s3vectors:CreateIndex]"
    ),
}
BUCKET_STATEMENTS = {
    "bucket": ("KnowledgeBucketList", "!GetAtt KnowledgeBucket.Arn"),
    "knowledge": ("KnowledgeObjectRead", "!Sub ${KnowledgeBucket.Arn}/knowledge/*"),
    "workspace": ("WorkspaceObjects", "!Sub ${KnowledgeBucket.Arn}/workspace/*"),
}


def policies(rights: Rights) -> list[str]:
    """A function's ``Policies``: the records table, then the bucket, the models and the vector index."""
    sid, actions = RECORDS_ACTIONS[rights.records]
    if rights.scans:
        actions = actions.removesuffix("]") + ", dynamodb:Scan]"
    lines = [
        "Policies:",
        "  - Statement:",
        f"      - Sid: {sid}",
        "        Effect: Allow",
        f"        Action: {actions}",
        f"        Resource: {TABLE}",
    ]
    others = (
        _bucket_statements(rights) + _model_statements(rights) + _index_statements(rights) + _queue_statements(rights)
    )
    if others:
        lines += ["  - Statement:", *("      " + line for line in others)]
    return lines


def _bucket_statements(rights: Rights) -> list[str]:
    lines: list[str] = []
    for place, (sid, resource) in BUCKET_STATEMENTS.items():
        actions = [
            action for action in S3_ACTIONS if any(g.action == action and g.place == place for g in rights.bucket)
        ]
        if actions:
            action = actions[0] if len(actions) == 1 else "[" + ", ".join(actions) + "]"
            lines += [f"- Sid: {sid}", "  Effect: Allow", f"  Action: {action}", f"  Resource: {resource}"]
    return lines


def _model_statements(rights: Rights) -> list[str]:
    lines: list[str] = []
    if rights.extracts:
        lines += [
            "- Sid: ExtractWithModel",
            "  Effect: Allow",
            "  Action: bedrock:InvokeModel",
            "  Resource: !If",
            "    - ExtractorIsProfileArn",
            "    - !Ref ExtractorModelId",
            "    - !If",
            "      - ExtractorIsSystemProfile",
            "      - !Sub arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/${ExtractorModelId}",
            "      - !Sub arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${ExtractorModelId}",
            "# A profile runs its model in the regions it routes to (global.: the region-less ARN):",
            "# any region's foundation model, only through this profile.",
            "- !If",
            "  - ExtractorIsProfile",
            "  - Sid: ExtractThroughProfile",
            "    Effect: Allow",
            "    Action: bedrock:InvokeModel",
            "    Resource: !Sub arn:${AWS::Partition}:bedrock:*::foundation-model/*",
            "    Condition:",
            "      StringEquals:",
            "        bedrock:InferenceProfileArn: !If",
            "          - ExtractorIsProfileArn",
            "          - !Ref ExtractorModelId",
            "          - !Sub arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/${ExtractorModelId}",
            "  - !Ref AWS::NoValue",
        ]
    if rights.embeds:
        lines += [
            "- Sid: EmbedWithTitan",
            "  Effect: Allow",
            "  Action: bedrock:InvokeModel",
            "  Resource: !Sub",
            "    - arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${ModelId}",
            "    - ModelId: !FindInMap [Titan, Model, Id]",
        ]
    return lines


def _index_statements(rights: Rights) -> list[str]:
    if rights.index is None:
        return []
    sid, actions = INDEX_ACTIONS[rights.index]
    # One statement either way (VectorStore): the S3 vector bucket, or the collection or the existing domain.
    return [
        "- !If",
        "  - UseS3Vectors",
        f"  - Sid: {sid}",
        "    Effect: Allow",
        f"    Action: {S3VECTORS_ACTIONS[rights.index]}",
        "    Resource: [!GetAtt VectorBucket.VectorBucketArn, !Sub '${VectorBucket.VectorBucketArn}/index/*']",
        f"  - Sid: {sid}",
        "    Effect: Allow",
        "    Action: !If",
        "      - CreateCollection",
        "      - aoss:APIAccessAll",
        f"      - {actions}",
        "    Resource: !If",
        "      - CreateCollection",
        "      - !GetAtt VectorCollection.Arn",
        "      - !Sub arn:${AWS::Partition}:es:${AWS::Region}:${AWS::AccountId}:domain/${ExistingOpenSearchDomainName}/*",
    ]


def _queue_statements(rights: Rights) -> list[str]:
    """Sending to the extraction FIFO queue: only SendMessage, only that queue (no receive, no purge).

    No Sid here begins with ``Extract``: that prefix names the model statements (ExtractWithModel,
    ExtractThroughProfile), which tests find by it."""
    if not rights.extraction_queue:
        return []
    return [
        "- Sid: NotifyExtractionQueue",
        "  Effect: Allow",
        "  Action: sqs:SendMessage",
        "  Resource: !GetAtt ExtractionQueue.Arn",
    ]


def extraction_consumer_statements() -> list[str]:
    """What the extraction function needs of the queues beyond sending notices (``NotifyExtractionQueue``): its two
    event source mappings read and delete the messages of both queues (the rights Lambda's poller uses, which
    SAM's SQS event would grant on every queue of the account through AWSLambdaSQSQueueExecutionRole), and it
    arms idle wake-ups on the wake queue."""
    return [
        "- Sid: ConsumeExtractionQueues",
        "  Effect: Allow",
        "  Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes]",
        "  Resource: [!GetAtt ExtractionQueue.Arn, !GetAtt ExtractionWakeQueue.Arn]",
        "- Sid: ArmExtractionWakeUps",
        "  Effect: Allow",
        "  Action: sqs:SendMessage",
        "  Resource: !GetAtt ExtractionWakeQueue.Arn",
    ]
