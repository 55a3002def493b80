import { randomBytes } from 'node:crypto';
import { parseDeliveryReport } from './delivery-report';

/** Fixtures are written with LF; `crlf` gives them the line ends they have on the wire. */
const crlf = (text: string) => Buffer.from(text.replace(/\n/g, '\r\n'));
const lf = (text: string) => Buffer.from(text);

const POSTFIX_BOUNCE = `Return-Path: <>
Received: by mx.example.net (Postfix)
	id 3F2A41C0123; Tue,  3 Jun 2025 10:15:02 +0000 (UTC)
Date: Tue,  3 Jun 2025 10:15:02 +0000 (UTC)
From: MAILER-DAEMON@mx.example.net (Mail Delivery System)
Subject: Undelivered Mail Returned to Sender
To: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
	boundary="3F2A41C0123.1748945702/mx.example.net"
Content-Transfer-Encoding: 8bit
Message-Id: <20250603101502.3F2A41C0123@mx.example.net>

This is a MIME-encapsulated message.

--3F2A41C0123.1748945702/mx.example.net
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.example.net.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients. It's attached below.

                   The mail system

<alice@example.net>: host mx.example.net[192.0.2.10] said: 550 5.1.1
    <alice@example.net>: Recipient address rejected: User unknown in virtual
    mailbox table (in reply to RCPT TO command)

<Bob@example.net>: host mx.example.net[192.0.2.10] said: 552 5.2.2
    <Bob@example.net>: Mailbox full (in reply to RCPT TO command)

--3F2A41C0123.1748945702/mx.example.net
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net
X-Postfix-Queue-ID: 3F2A41C0123
X-Postfix-Sender: rfc822; bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Arrival-Date: Tue,  3 Jun 2025 10:14:58 +0000 (UTC)

Final-Recipient: rfc822; alice@example.net
Original-Recipient: rfc822;alice@example.net
Action: failed
Status: 5.1.1
Remote-MTA: dns; mx.example.net
Diagnostic-Code: smtp; 550 5.1.1 <alice@example.net>: Recipient address
    rejected: User unknown in virtual mailbox table

Final-Recipient: rfc822; Bob@example.net
Original-Recipient: rfc822;Bob@example.net
Action: failed
Status: 5.2.2
Remote-MTA: dns; mx.example.net
Diagnostic-Code: smtp; 552 5.2.2 <Bob@example.net>: Mailbox full

--3F2A41C0123.1748945702/mx.example.net
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers
Content-Transfer-Encoding: 8bit

Return-Path: <bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test>
Received: from mr.test (mr.test [198.51.100.1])
	by mx.example.net (Postfix) with ESMTPS id 3F2A41C0123
	for <alice@example.net>; Tue,  3 Jun 2025 10:14:58 +0000 (UTC)
From: Shop <news@shop.example>
To: alice@example.net, Bob@example.net
Subject: Your order
Message-ID:
 <msg_4fQ2xYz@mr.test>
Date: Tue, 03 Jun 2025 10:14:57 +0000
MIME-Version: 1.0

--3F2A41C0123.1748945702/mx.example.net--
`;

const EXIM_BOUNCE = `Return-path: <>
Envelope-to: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Received: from Debian-exim by mail.example.org with local (Exim 4.96)
	id 1sE6ZL-0004Nn-2Q
	for bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test; Tue, 03 Jun 2025 10:20:03 +0000
X-Failed-Recipients: carol@example.org
Auto-Submitted: auto-replied
From: Mail Delivery System <Mailer-Daemon@mail.example.org>
To: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Content-Type: multipart/report; report-type=delivery-status; boundary=1748946003-eximdsn-1804289383
MIME-Version: 1.0
Subject: Mail delivery failed: returning message to sender
Message-Id: <E1sE6ZL-0004Nn-2Q@mail.example.org>
Date: Tue, 03 Jun 2025 10:20:03 +0000

--1748946003-eximdsn-1804289383
Content-type: text/plain; charset=us-ascii

This message was created automatically by mail delivery software.

A message that you sent could not be delivered to one or more of its
recipients. This is a permanent error. The following address(es) failed:

  carol@example.org
    host mx.example.org [203.0.113.5]
    SMTP error from remote mail server after RCPT TO:<carol@example.org>:
    550 5.1.1 <carol@example.org>: Recipient address rejected: User unknown

--1748946003-eximdsn-1804289383
Content-type: message/delivery-status

Reporting-MTA: dns; mail.example.org

Action: failed
Final-Recipient: rfc822;carol@example.org
Status: 5.0.0
Remote-MTA: dns; mx.example.org
Diagnostic-Code: smtp; 550 5.1.1 <carol@example.org>: Recipient address rejected: User unknown

--1748946003-eximdsn-1804289383
Content-type: message/rfc822

Return-path: <bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test>
Received: from mr.test ([198.51.100.1])
	by mail.example.org with esmtps (TLS1.3) tls TLS_AES_256_GCM_SHA384
	(Exim 4.96)
	(envelope-from <bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test>)
	id 1sE6ZK-0004Nj-2B
	for carol@example.org; Tue, 03 Jun 2025 10:20:02 +0000
From: Shop <news@shop.example>
To: carol@example.org
Subject: Your order
Message-ID: <msg_Exim0001@mr.test>
Date: Tue, 03 Jun 2025 10:20:01 +0000
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="inner"

--inner
Content-Type: text/plain

Thanks for your order.
--inner
Content-Type: text/html

<p>Thanks for your order.</p>
--inner--

--1748946003-eximdsn-1804289383--
`;

const GMAIL_BOUNCE = `Delivered-To: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Return-Path: <>
From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>
To: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Auto-Submitted: auto-replied
Subject: Delivery Status Notification (Failure)
References: <msg_Gmail0001@mr.test>
In-Reply-To: <msg_Gmail0001@mr.test>
X-Failed-Recipients: dave.nobody@gmail.com
Message-ID: <683ecbb2.a70a0220.1b2c3d.0123.GMR@mx.google.com>
Date: Tue, 03 Jun 2025 03:12:12 -0700 (PDT)
MIME-Version: 1.0
Content-Type: multipart/report; boundary="000000000000a1b2c3d4e5f60718"; report-type=delivery-status

--000000000000a1b2c3d4e5f60718
Content-Type: multipart/related; boundary="000000000000a1b7c3d4e5f60719"

--000000000000a1b7c3d4e5f60719
Content-Type: multipart/alternative; boundary="000000000000a1bac3d4e5f6071a"

--000000000000a1bac3d4e5f6071a
Content-Type: text/plain; charset="UTF-8"


** Address not found **

Your message wasn't delivered to dave.nobody@gmail.com because the address couldn't be found, or is unable to receive mail.

Learn more here: https://support.google.com/mail/?p=NoSuchUser

The response was:

The email account that you tried to reach does not exist. Please try double-checking the recipient's email address for typos or unnecessary spaces. For more information, go to https://support.google.com/mail/?p=NoSuchUser

--000000000000a1bac3d4e5f6071a
Content-Type: text/html; charset="UTF-8"

<html><body><h2>Address not found</h2><p>Your message wasn't delivered to <a>dave.nobody@gmail.com</a>.</p></body></html>
--000000000000a1bac3d4e5f6071a--
--000000000000a1b7c3d4e5f60719
Content-Type: image/png; name="icon.png"
Content-Disposition: attachment; filename="icon.png"
Content-Transfer-Encoding: base64
Content-ID: <icon.png>

iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==
--000000000000a1b7c3d4e5f60719--
--000000000000a1b2c3d4e5f60718
Content-Type: message/delivery-status

Reporting-MTA: dns; googlemail.com
Received-From-MTA: dns; mr.test
Arrival-Date: Tue, 03 Jun 2025 03:12:11 -0700 (PDT)
X-Original-Message-ID: <msg_Gmail0001@mr.test>

Final-Recipient: rfc822; dave.nobody@gmail.com
Action: failed
Status: 5.1.1
Remote-MTA: dns; gmail-smtp-in.l.google.com. (142.250.27.26, the server for the domain gmail.com.)
Diagnostic-Code: smtp; 550-5.1.1 The email account that you tried to reach does not exist. Please try
 550-5.1.1 double-checking the recipient's email address for typos or
 550-5.1.1 unnecessary spaces. For more information, go to
 550 5.1.1  https://support.google.com/mail/?p=NoSuchUser 41be03b00d2f7-5b0b1234abcsi123456a.123 - gsmtp
Last-Attempt-Date: Tue, 03 Jun 2025 03:12:12 -0700 (PDT)

--000000000000a1b2c3d4e5f60718
Content-Type: text/rfc822-headers; charset="UTF-8"

DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=mr.test; s=mr1;
        h=from:to:subject:message-id:date; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;
        b=dGVzdA==
From: Shop <news@shop.example>
To: dave.nobody@gmail.com
Subject: Your order
Message-ID: <msg_Gmail0001@mr.test>
Date: Tue, 03 Jun 2025 10:12:10 +0000

--000000000000a1b2c3d4e5f60718--
`;

const POSTFIX_DELAY = `From: MAILER-DAEMON@mx.example.net (Mail Delivery System)
Subject: Delayed Mail (still being retried)
To: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
	boundary="7C1B91C0456.1748960098/mx.example.net"
Message-Id: <20250603141458.7C1B91C0456@mx.example.net>

--7C1B91C0456.1748960098/mx.example.net
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.example.net.

####################################################################
# THIS IS A WARNING ONLY.  YOU DO NOT NEED TO RESEND YOUR MESSAGE. #
####################################################################

Your message could not be delivered for more than 4 hour(s).
It will be retried until it is 5 day(s) old.

--7C1B91C0456.1748960098/mx.example.net
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net
X-Postfix-Queue-ID: 7C1B91C0456
Arrival-Date: Tue,  3 Jun 2025 10:14:58 +0000 (UTC)

Final-Recipient: rfc822; erin@slow.example
Original-Recipient: rfc822;erin@slow.example
Action: delayed
Status: 4.4.1
Diagnostic-Code: X-Postfix; connect to mx.slow.example[198.51.100.7]:25: Connection
    timed out
Will-Retry-Until: Sun,  8 Jun 2025 10:14:58 +0000 (UTC)

--7C1B91C0456.1748960098/mx.example.net
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

From: Shop <news@shop.example>
To: erin@slow.example
Subject: Your order
Message-ID: <msg_Delay0001@mr.test>

--7C1B91C0456.1748960098/mx.example.net--
`;

/** A success notice and a minimal relay's DSN: an outcome from the Action, or from the Status when there is none. */
const SUCCESS_AND_STATUS_ONLY = `From: postmaster@relay.example
To: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Subject: Delivery Status Notification
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b"

--b
Content-Type: text/plain

Delivery report.
--b
Content-Type: message/delivery-status

Reporting-MTA: dns; relay.example

Final-Recipient: rfc822; frank@relay.example
Action: relayed
Status: 2.0.0 (sent on to a non-DSN MTA)

Original-Recipient: rfc822;<grace@relay.example>
Status: 5.7.1

Final-Recipient: rfc822; heidi@relay.example
Action: expanded (to a list)
Status: 2.0.0

Final-Recipient: rfc822; ivan@relay.example
Action: delayed
Status: 4.7.0
Diagnostic-Code: smtp; 451-4.7.0 Greylisted, please
 451 4.7.0 come back later

Final-Recipient: rfc822; judy@relay.example
Action: something-new
--b--
`;

/** RFC 6533: UTF-8 addresses in a message/global-delivery-status part. */
const GLOBAL_BOUNCE = `From: MAILER-DAEMON@mx.example.de
To: bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Subject: Undeliverable
MIME-Version: 1.0
Content-Type: multipart/report; report-type=global-delivery-status; boundary="g"

--g
Content-Type: text/plain; charset=utf-8

Your message could not be delivered.
--g
Content-Type: message/global-delivery-status

Reporting-MTA: dns; mx.example.de

Final-Recipient: utf-8; jörg@bücher.example
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 Benutzer unbekannt: jörg
--g
Content-Type: message/global-headers

From: Shop <news@shop.example>
To: jörg@bücher.example
Subject: Bestellung
Message-ID: <msg_Global01@mr.test>
--g--
`;

/** RFC 5965 appendix B, the message being one of ours. */
const ARF_COMPLAINT = `From: <abusedesk@example.com>
Date: Thu, 8 Mar 2005 17:40:36 EDT
Subject: FW: Earn money
To: <abuse@mr.test>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report;
     boundary="part1_13d.2e68ed54_boundary"

--part1_13d.2e68ed54_boundary
Content-Type: text/plain; charset="US-ASCII"
Content-Transfer-Encoding: 7bit

This is an email abuse report for an email message received from IP
198.51.100.1 on Thu, 8 Mar 2005 14:00:00 EDT.  For more information
about this format please see http://www.mipassoc.org/arf/.

--part1_13d.2e68ed54_boundary
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Mail-From: <bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test>
Original-Rcpt-To: <user@example.com>
Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT
Reporting-MTA: dns; mail.example.com
Source-IP: 198.51.100.1
Authentication-Results: mail.example.com;
               spf=pass smtp.mail=bounces+mzxw6ytboi-abcdefghijklm@bounce.mr.test
Reported-Domain: shop.example
Reported-Uri: http://shop.example/earn_money.html
Removal-Recipient: user@example.com

--part1_13d.2e68ed54_boundary
Content-Type: message/rfc822
Content-Disposition: inline

From: <news@shop.example>
Received: from mr.test (mr.test
        [198.51.100.1]) by example.com with ESMTP id M63d4137594e46;
        Thu, 08 Mar 2005 14:00:00 -0400
To: <Undisclosed Recipients>
Subject: Earn money
MIME-Version: 1.0
Content-type: text/plain
Message-ID: msg_Arf00001@mr.test
Date: Thu, 02 Sep 2004 12:31:03 -0500

Spam Spam Spam
Spam Spam Spam
--part1_13d.2e68ed54_boundary--
`;

const PLAIN_MESSAGE = `From: Alice <alice@example.net>
To: news@shop.example
Subject: Re: Your order
Message-ID: <reply-1@example.net>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="m"

--m
Content-Type: text/plain

Action: failed
Status: 5.1.1
Final-Recipient: rfc822; alice@example.net
--m
Content-Type: application/pdf; name="invoice.pdf"
Content-Disposition: attachment; filename="invoice.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQKJcOkw7zDtsOfCg==
--m--
`;

/** Someone forwarding a bounce as an attachment: the report inside is not about a message of ours. */
const FORWARDED_BOUNCE = `From: Shop <news@shop.example>
To: help@mr.test
Subject: Fwd: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="fwd"

--fwd
Content-Type: text/plain

Why did this bounce?
--fwd
Content-Type: message/rfc822
Content-Disposition: inline

${POSTFIX_BOUNCE}
--fwd--
`;

describe('parseDeliveryReport', () => {
  const postfixResult = {
    originalMessageId: '<msg_4fQ2xYz@mr.test>',
    recipients: [
      {
        outcome: 'bounced',
        recipient: 'alice@example.net',
        status: '5.1.1',
        reason: '550 5.1.1 <alice@example.net>: Recipient address rejected: User unknown in virtual mailbox table',
        suppresses: true,
      },
      {
        outcome: 'bounced',
        recipient: 'Bob@example.net',
        status: '5.2.2',
        reason: '552 5.2.2 <Bob@example.net>: Mailbox full',
        suppresses: false,
      },
    ],
  };

  it('reads both recipients of a Postfix bounce, with CRLF line ends as received over SMTP', async () => {
    expect(await parseDeliveryReport(crlf(POSTFIX_BOUNCE))).toEqual(postfixResult);
  });

  it('reads the same Postfix bounce with LF line ends', async () => {
    expect(await parseDeliveryReport(lf(POSTFIX_BOUNCE))).toEqual(postfixResult);
  });

  it('reads an Exim bounce and the Message-ID of the whole message it returns', async () => {
    expect(await parseDeliveryReport(crlf(EXIM_BOUNCE))).toEqual({
      originalMessageId: '<msg_Exim0001@mr.test>',
      recipients: [
        {
          outcome: 'bounced',
          recipient: 'carol@example.org',
          status: '5.0.0',
          reason: '550 5.1.1 <carol@example.org>: Recipient address rejected: User unknown',
          suppresses: true,
        },
      ],
    });
  });

  it('reads a Gmail bounce, dropping the reply code Gmail repeats on every line of its reason', async () => {
    expect(await parseDeliveryReport(crlf(GMAIL_BOUNCE))).toEqual({
      originalMessageId: '<msg_Gmail0001@mr.test>',
      recipients: [
        {
          outcome: 'bounced',
          recipient: 'dave.nobody@gmail.com',
          status: '5.1.1',
          reason:
            "550 5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient's email " +
            'address for typos or unnecessary spaces. For more information, go to https://support.google.com/mail/?p=NoSuchUser ' +
            '41be03b00d2f7-5b0b1234abcsi123456a.123 - gsmtp',
          suppresses: true,
        },
      ],
    });
  });

  it('reads a delay notice as deferred', async () => {
    expect(await parseDeliveryReport(crlf(POSTFIX_DELAY))).toEqual({
      originalMessageId: '<msg_Delay0001@mr.test>',
      recipients: [
        {
          outcome: 'deferred',
          recipient: 'erin@slow.example',
          status: '4.4.1',
          reason: 'connect to mx.slow.example[198.51.100.7]:25: Connection timed out',
          suppresses: false,
        },
      ],
    });
  });

  it('takes the outcome from the Action, else from the Status class, and skips a recipient with neither', async () => {
    expect(await parseDeliveryReport(lf(SUCCESS_AND_STATUS_ONLY))).toEqual({
      originalMessageId: null,
      recipients: [
        {
          outcome: 'delivered',
          recipient: 'frank@relay.example',
          status: '2.0.0',
          reason: '2.0.0 relayed',
          suppresses: false,
          relayed: true,
        },
        { outcome: 'bounced', recipient: 'grace@relay.example', status: '5.7.1', reason: '5.7.1', suppresses: false },
        {
          outcome: 'delivered',
          recipient: 'heidi@relay.example',
          status: '2.0.0',
          reason: '2.0.0 expanded',
          suppresses: false,
          relayed: true,
        },
        {
          outcome: 'deferred',
          recipient: 'ivan@relay.example',
          status: '4.7.0',
          reason: '451 4.7.0 Greylisted, please come back later',
          suppresses: false,
        },
      ],
    });
  });

  it('fails but does not suppress a recipient whose bounce is about the content or policy, not the address', async () => {
    const statusPart = (status: string, diagnosticCode?: string) =>
      POSTFIX_BOUNCE.replace(
        /Content-Type: message\/delivery-status\n\n[\s\S]*?\n\n--/,
        'Content-Type: message/delivery-status\n\nReporting-MTA: dns; mx.relay.example\n\n' +
          `Final-Recipient: rfc822; owner@site-a.test\nAction: failed\nStatus: ${status}\n` +
          (diagnosticCode ? `Diagnostic-Code: smtp; ${diagnosticCode}\n` : '') +
          '\n--',
      );
    const outcome = async (status: string, diagnosticCode?: string) =>
      (await parseDeliveryReport(crlf(statusPart(status, diagnosticCode))))?.recipients;
    expect(
      await outcome('5.7.0', '552-5.7.0 This message was blocked because its content presents a potential\n 552-5.7.0 security issue.'),
    ).toEqual([
      {
        outcome: 'bounced',
        recipient: 'owner@site-a.test',
        status: '5.7.0',
        reason: '552 5.7.0 This message was blocked because its content presents a potential security issue.',
        suppresses: false,
      },
    ]);
    expect(await outcome('5.0.0', '554 Message refused')).toMatchObject([{ outcome: 'bounced', suppresses: false }]);
    expect(await outcome('5.0.0')).toMatchObject([{ outcome: 'bounced', suppresses: false }]);
    expect(await outcome('5.0.0', '550 Requested action not taken: mailbox unavailable')).toMatchObject([{ suppresses: true }]);
    expect(await outcome('5.1.10', '550 5.1.10 null MX')).toMatchObject([{ suppresses: true }]);
  });

  it('reads an RFC 6533 report with UTF-8 addresses', async () => {
    expect(await parseDeliveryReport(crlf(GLOBAL_BOUNCE))).toEqual({
      originalMessageId: '<msg_Global01@mr.test>',
      recipients: [
        {
          outcome: 'bounced',
          recipient: 'jörg@bücher.example',
          status: '5.1.1',
          reason: '550 5.1.1 Benutzer unbekannt: jörg',
          suppresses: true,
        },
      ],
    });
  });

  it('reads the report part when it is transfer-encoded', async () => {
    const report =
      'Reporting-MTA: dns; mx.example.net\r\n\r\nFinal-Recipient: rfc822; alice@example.net\r\nAction: failed\r\nStatus: 5.1.1\r\n';
    const encoded = POSTFIX_BOUNCE.replace(
      /Content-Type: message\/delivery-status\n\n[\s\S]*?\n\n--/,
      `Content-Type: message/delivery-status\nContent-Transfer-Encoding: base64\n\n${Buffer.from(report).toString('base64')}\n\n--`,
    );
    expect((await parseDeliveryReport(crlf(encoded)))?.recipients).toEqual([
      { outcome: 'bounced', recipient: 'alice@example.net', status: '5.1.1', reason: '5.1.1 failed', suppresses: true },
    ]);
  });

  it('reads an ARF abuse report as a complaint about its Original-Rcpt-To', async () => {
    expect(await parseDeliveryReport(crlf(ARF_COMPLAINT))).toEqual({
      originalMessageId: '<msg_Arf00001@mr.test>',
      recipients: [{ outcome: 'complained', recipient: 'user@example.com', status: null, reason: 'abuse', suppresses: true }],
    });
  });

  it('reads an ARF report whose recipient was redacted as a complaint about no known recipient', async () => {
    const redacted = ARF_COMPLAINT.replace('Original-Rcpt-To: <user@example.com>\n', '');
    expect((await parseDeliveryReport(lf(redacted)))?.recipients).toEqual([
      { outcome: 'complained', recipient: null, status: null, reason: 'abuse', suppresses: true },
    ]);
  });

  it('is null for a message that is not a report, even one that looks like it or carries one', async () => {
    expect(await parseDeliveryReport(crlf(PLAIN_MESSAGE))).toBeNull();
    expect(await parseDeliveryReport(crlf(FORWARDED_BOUNCE))).toBeNull();
    const plainTextBounce = 'From: MAILER-DAEMON@b.example\nSubject: failure notice\n\nSorry, I could not deliver to <c@d.example>.\n';
    expect(await parseDeliveryReport(lf(plainTextBounce))).toBeNull();
    const reportWithoutStatus = POSTFIX_BOUNCE.replace('Content-Type: message/delivery-status', 'Content-Type: text/plain');
    expect(await parseDeliveryReport(lf(reportWithoutStatus))).toBeNull();
    const boundary = '\n--3F2A41C0123.1748945702/mx.example.net\nContent-Description: Undelivered';
    const statusNestedDeeper = POSTFIX_BOUNCE.replace(
      'Content-Type: message/delivery-status\n',
      'Content-Type: multipart/mixed; boundary="inner"\n\n--inner\nContent-Type: message/delivery-status\n',
    ).replace(boundary, `\n--inner--${boundary}`);
    expect(await parseDeliveryReport(lf(statusNestedDeeper))).toBeNull();
  });

  it('is null for garbage and never throws', async () => {
    const cut = POSTFIX_BOUNCE.slice(0, POSTFIX_BOUNCE.indexOf('Content-Type: message/delivery-status') + 20);
    for (const garbage of [Buffer.alloc(0), randomBytes(4096), lf('\n\n\n'), lf('Content-Type: multipart/report\n\n--\n'), lf(cut)]) {
      await expect(parseDeliveryReport(garbage)).resolves.toBeNull();
    }
  });
});
